import { ApiException } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { toKubeError } from "./kube-api.js";

function apiError(code: number, message: string): ApiException<string> {
  const body = JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message, code });
  return new ApiException(code, "Unknown API Status Code!", body, {});
}

describe("toKubeError", () => {
  it("classifies each status the controller acts on and keeps the API server's own message", () => {
    const cases: [number, string][] = [
      [409, "conflict"],
      [422, "invalid"],
      [400, "invalid"],
      [403, "forbidden"],
      [401, "forbidden"],
      [404, "not-found"],
      [410, "gone"],
      [429, "transient"],
      [500, "transient"],
      [503, "transient"],
    ];
    for (const [code, kind] of cases) {
      const err = toKubeError(apiError(code, `the server says ${code}`), "create Job j");
      expect([err.kind, err.status, err.message]).toEqual([kind, code, `create Job j: the server says ${code}`]);
    }
  });

  it("treats an unreachable API server as transient", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:6443"), { code: "ECONNREFUSED" });
    const err = toKubeError(refused, "list Jobs");
    expect([err.kind, err.status]).toEqual(["transient", 0]);
    expect(err.message).toBe("list Jobs: API server unreachable: connect ECONNREFUSED 127.0.0.1:6443");
  });

  it("reads a watch's statusCode (410 from an expired resourceVersion)", () => {
    const err = toKubeError(Object.assign(new Error("Gone"), { statusCode: 410 }), "watch Jobs");
    expect(err.kind).toBe("gone");
  });
});
