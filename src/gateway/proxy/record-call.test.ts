import { describe, expect, it } from "vitest";
import { buildModelRequestData, type CallRecord, modelRequestDataJson } from "./record-call.js";

const request = { model: "policy", messages: [{ role: "user", content: "hi \u2019 \u{1F600}" }], logprobs: true };
const response = {
  id: "c1",
  prompt_token_ids: [1, 2, 3],
  choices: [
    {
      index: 0,
      message: { role: "assistant", content: "ok" },
      token_ids: [7, 8],
      logprobs: {
        content: [
          { token: "o", logprob: -0.5 },
          { token: "k", logprob: -1e-7 },
        ],
      },
      finish_reason: "stop",
    },
  ],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
};

function record(over: Partial<CallRecord> = {}): CallRecord {
  return {
    kind: "chat",
    model: "policy",
    endpoint: { model: "policy", endpoint: "http://h/v1", version: 4 },
    request,
    response,
    error: null,
    latencyMs: 1.5,
    httpStatus: 200,
    retryCount: 0,
    ...over,
  };
}

describe("modelRequestDataJson", () => {
  it("is byte for byte JSON.stringify(data) when the known texts are the objects' own JSON", () => {
    const data = buildModelRequestData(record());
    const known = { request, requestText: JSON.stringify(request), response, responseText: JSON.stringify(response) };
    expect(modelRequestDataJson(data, known)).toBe(JSON.stringify(data));
    const error = buildModelRequestData(record({ response: null, error: { message: "boom" }, httpStatus: 400 }));
    expect(modelRequestDataJson(error, known)).toBe(JSON.stringify(error));
  });

  it("writes the fields after the texts as JSON.stringify does: added ones in order, undefined ones left out", () => {
    const data = {
      ...buildModelRequestData(record()),
      agent_name: "critic",
      skipped: undefined,
      upstream_request_id: "arclight-0123456789abcdef-1-0",
      extra: { nested: [1, "two", null] },
    };
    const known = { request, requestText: JSON.stringify(request), response, responseText: JSON.stringify(response) };
    expect(modelRequestDataJson(data, known)).toBe(JSON.stringify(data));
    const { request: first, ...others } = buildModelRequestData(record());
    const reordered = { request: first, ...others };
    expect(modelRequestDataJson(reordered, { ...known, requestText: "{}" })).toBe(JSON.stringify(reordered));
  });

  it("splices the upstream's own text verbatim (its spacing kept), parsing to the same data", () => {
    const data = buildModelRequestData(record());
    const responseText = JSON.stringify(response, null, 2);
    const json = modelRequestDataJson(data, { request, requestText: JSON.stringify(request), response, responseText });
    expect(json).toContain(`"response":${responseText}`);
    expect(JSON.parse(json)).toEqual(data);
    expect(Object.keys(JSON.parse(json))).toEqual(Object.keys(data));
  });

  it("serialises a response the capture check changed instead of splicing the stale upstream text", () => {
    const misaligned = { ...response, choices: [{ ...response.choices[0]!, token_ids: [7] }] };
    const data = buildModelRequestData(record({ response: misaligned }));
    expect(data.capture_incomplete).toBe(true);
    const known = { request, requestText: "{}", response: misaligned, responseText: JSON.stringify(misaligned) };
    const parsed = JSON.parse(modelRequestDataJson(data, known));
    expect(parsed.response.choices[0].logprobs).toBeNull();
    expect(parsed.request).toEqual({}); // the request object matched, so its known text was used
    expect(parsed).toEqual({ ...data, request: {} });
  });
});
