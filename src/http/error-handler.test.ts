import { errorCodes } from "fastify";
import { describe, expect, it } from "vitest";
import { MAX_FRAMEWORK_DETAIL, MAX_PATH_IN_DETAIL, pathForDetail, toErrorResponse } from "./error-handler.js";

describe("toErrorResponse: a framework message quoting an over-long input", () => {
  it("keeps the reason at the message's end and shortens only the quoted URL, noting its length", () => {
    const path = `/api/rollouts/${"y".repeat(1001)}`;
    const { status, body } = toErrorResponse(new errorCodes.FST_ERR_MAX_PARAM_LENGTH(path));
    expect(status).toBe(414);
    expect(body.code).toBe("fst_err_max_param_length");
    const detail = body.detail as string;
    expect(detail.length).toBeLessThanOrEqual(MAX_FRAMEWORK_DETAIL);
    expect(detail).toMatch(/^'\/api\/rollouts\/y+…' \(1015 characters\) is exceeding the max param length$/);
  });

  it("cuts a long message without a quoted part to its start, noting its length", () => {
    const err = Object.assign(new Error(`bad ${"z".repeat(500)}`), { statusCode: 400, code: "FST_ERR_X" });
    const detail = toErrorResponse(err).body.detail as string;
    expect(detail.length).toBeLessThanOrEqual(MAX_FRAMEWORK_DETAIL);
    expect(detail).toMatch(/^bad z+… \(504 characters\)$/);
  });

  it("leaves a message within the limit as it is", () => {
    const { body } = toErrorResponse(new errorCodes.FST_ERR_BAD_URL("/api/rollouts/%zz"));
    expect(body).toEqual({ detail: "'/api/rollouts/%zz' is not a valid url component", code: "fst_err_bad_url" });
  });
});

describe("pathForDetail", () => {
  it("drops the query and keeps a path within the limit as it is", () => {
    expect(pathForDetail("/api/nothing?x=1")).toBe("/api/nothing");
    const longest = `/${"a".repeat(MAX_PATH_IN_DETAIL - 1)}`;
    expect(pathForDetail(longest)).toBe(longest);
  });

  it("cuts a longer path to its start and notes its length", () => {
    const path = `/${"a".repeat(MAX_PATH_IN_DETAIL)}`;
    expect(pathForDetail(`${path}?q=${"b".repeat(10)}`)).toBe(`${path.slice(0, MAX_PATH_IN_DETAIL)}… (201 characters)`);
  });
});
