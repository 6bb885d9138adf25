import { describe, expect, it } from "vitest";
import type { Event } from "./event.js";
import { choiceLogprobs, toTripletEvents, toTripletModelRequest, toTripletReward } from "./triplet.js";

let sequence = 0;
/** A stored event of rollout r1, attempt 0, with the next sequence number. */
function event(event_type: string, data: Record<string, unknown>): Event {
  sequence += 1;
  return { event_type, rollout_id: "r1", attempt_id: "0", timestamp: 1, data, sequence, event_id: null };
}

/** `model_request` data in the shape the proxy stores (vLLM chat response with token ids). */
function modelRequest(promptIds: number[], responseIds: number[], extra: Record<string, unknown> = {}) {
  return {
    model: "policy",
    model_version: 2,
    response: { prompt_token_ids: promptIds, choices: [{ token_ids: responseIds }] },
    server: { model: "policy", endpoint: "http://h:8000/v1", version: 3 },
    ...extra,
  };
}

describe("toTripletModelRequest", () => {
  it("reads top-level prompt_token_ids and the first choice's token_ids, keeping only server model and version", () => {
    const out = toTripletModelRequest(modelRequest([1, 2, 3], [7, 8]));
    expect(out).toEqual({
      prompt_token_ids: [1, 2, 3],
      response_token_ids: [7, 8],
      response_log_probs: null,
      server: { model: "policy", version: 3 },
    });
  });

  it("falls back to the first choice's prompt_token_ids when the top level has none", () => {
    const data = { response: { choices: [{ prompt_token_ids: [4, 5], token_ids: [6] }, { token_ids: [9] }] } };
    const out = toTripletModelRequest({ ...data, model: "m", model_version: 5 });
    expect(out.prompt_token_ids).toEqual([4, 5]);
    expect(out.response_token_ids).toEqual([6]);
    expect(out.server).toEqual({ model: "m", version: 5 });
  });

  it("prefers the top-level prompt ids over the choice's", () => {
    const data = { response: { prompt_token_ids: [1], choices: [{ prompt_token_ids: [2], token_ids: [3] }] } };
    expect(toTripletModelRequest(data).prompt_token_ids).toEqual([1]);
  });

  it("gives empty ids when the response has none (failed call) and keeps http_status, status and error", () => {
    const data = {
      model: "policy",
      model_version: 1,
      response: { error: { message: "maximum context length is 32768" } },
      http_status: 400,
      status: "error",
      error: { message: "maximum context length is 32768" },
      latency_ms: 3,
    };
    expect(toTripletModelRequest(data)).toEqual({
      prompt_token_ids: [],
      response_token_ids: [],
      response_log_probs: null,
      server: { model: "policy", version: 1 },
      http_status: 400,
      status: "error",
      error: { message: "maximum context length is 32768" },
    });
  });

  it("keeps capture_incomplete when the proxy set it", () => {
    expect(toTripletModelRequest({ ...modelRequest([1], [2]), capture_incomplete: true }).capture_incomplete).toBe(
      true,
    );
  });

  it("ignores token id arrays holding non-integers", () => {
    const out = toTripletModelRequest(modelRequest([1, 2.5], ["a" as unknown as number]));
    expect(out.prompt_token_ids).toEqual([]);
    expect(out.response_token_ids).toEqual([]);
  });
});

describe("toTripletModelRequest credit fields", () => {
  it("keeps what credit assignment reads: response id, span, finish reason, text, tool calls and offered tools", () => {
    const out = toTripletModelRequest({
      request: { tools: [{ type: "function", function: { name: "calc" } }, { name: "bare" }] },
      response: {
        id: "chatcmpl-1",
        choices: [
          {
            token_ids: [5],
            finish_reason: "tool_calls",
            message: {
              content: "using calc",
              tool_calls: [{ id: "t1", type: "function", function: { name: "calc", arguments: '{"x":1}' } }],
            },
          },
        ],
      },
      trace_context: { traceparent: "00-a-b-01", trace_id: "a", span_id: "b" },
    });
    expect(out).toMatchObject({
      response_id: "chatcmpl-1",
      span_id: "b",
      finish_reason: "tool_calls",
      response_text: "using calc",
      tool_calls: [{ name: "calc", arguments: '{"x":1}' }],
      tool_names: ["calc", "bare"],
    });
  });

  it("reads a completions choice's text and the recorded finish_reason", () => {
    const out = toTripletModelRequest({
      finish_reason: "length",
      response: { choices: [{ text: "12", token_ids: [1] }] },
    });
    expect(out).toMatchObject({ finish_reason: "length", response_text: "12" });
  });
});

describe("choiceLogprobs", () => {
  it("reads chat logprobs from logprobs.content[].logprob", () => {
    const choice = {
      logprobs: {
        content: [
          { token: "a", logprob: -0.5 },
          { token: "b", logprob: -1.25 },
        ],
      },
    };
    expect(choiceLogprobs(choice, 2)).toEqual([-0.5, -1.25]);
  });

  it("reads completions logprobs from logprobs.token_logprobs", () => {
    expect(choiceLogprobs({ logprobs: { token_logprobs: [-0.1, 0] } }, 2)).toEqual([-0.1, 0]);
  });

  it("is null when logprobs are missing, null, or the choice is absent", () => {
    expect(choiceLogprobs({}, 2)).toBeNull();
    expect(choiceLogprobs({ logprobs: null }, 2)).toBeNull();
    expect(choiceLogprobs(undefined, 0)).toBeNull();
  });

  it("is null when one value is non-finite or not a number", () => {
    expect(choiceLogprobs({ logprobs: { token_logprobs: [-0.1, null] } }, 2)).toBeNull();
    expect(choiceLogprobs({ logprobs: { token_logprobs: [-0.1, Number.NEGATIVE_INFINITY] } }, 2)).toBeNull();
    expect(choiceLogprobs({ logprobs: { content: [{ logprob: Number.NaN }] } }, 1)).toBeNull();
    expect(choiceLogprobs({ logprobs: { content: [{ token: "a" }] } }, 1)).toBeNull();
  });

  it("is null when there is not exactly one logprob per response token", () => {
    expect(choiceLogprobs({ logprobs: { token_logprobs: [-0.1] } }, 2)).toBeNull();
    expect(choiceLogprobs({ logprobs: { content: [{ logprob: -1 }, { logprob: -2 }] } }, 1)).toBeNull();
  });

  it("flows into toTripletModelRequest aligned with the response token ids", () => {
    const data = modelRequest([1], [5, 6], {});
    (data.response.choices[0] as Record<string, unknown>).logprobs = {
      content: [{ logprob: -0.25 }, { logprob: -2 }],
    };
    expect(toTripletModelRequest(data).response_log_probs).toEqual([-0.25, -2]);
  });
});

describe("toTripletReward", () => {
  it("keeps value, source and reason and drops everything else", () => {
    expect(toTripletReward({ value: 0.7, extra: "drop", message: "m" })).toEqual({ value: 0.7 });
    expect(toTripletReward({ value: -1, source: "judge", reason: "wrong answer", x: 1 })).toEqual({
      value: -1,
      source: "judge",
      reason: "wrong answer",
    });
  });

  it("keeps the call_id a reward names", () => {
    expect(toTripletReward({ value: 1, call_id: "chatcmpl-1", span_id: "x" })).toEqual({
      value: 1,
      call_id: "chatcmpl-1",
    });
  });
});

describe("toTripletEvents by retries (what arclight's trainer reads)", () => {
  it("drops a failed call that a later call of the same prompt retried, counting it on the survivor", () => {
    const failed = { status: "error", http_status: 502, error: { message: "boom" } };
    const events = [
      event("model_request", modelRequest([1, 2], [], failed)),
      event("reward", { value: 0.5 }),
      event("model_request", modelRequest([3, 4], [20])),
      event("model_request", modelRequest([1, 2], [30])),
      event("model_request", modelRequest([1, 2], [40])),
    ];
    const out = toTripletEvents(events, "retries");
    expect(out.map((e) => e.event_type)).toEqual(["reward", "model_request", "model_request", "model_request"]);
    const calls = out.slice(1).map((e) => e.data as { response_token_ids: number[]; deduped_retries?: number });
    expect(calls.map((c) => c.response_token_ids)).toEqual([[20], [30], [40]]);
    expect(calls.map((c) => c.deduped_retries)).toEqual([undefined, 1, undefined]);
    expect(out.map((e) => e.sequence)).toEqual(events.slice(1).map((e) => e.sequence));
  });

  // A rule of "same prompt ids → keep the last" would drop legitimate repeat samples of one prompt.
  it("keeps two successful samples of the same prompt", () => {
    const out = toTripletEvents(
      [event("model_request", modelRequest([1, 2], [10])), event("model_request", modelRequest([1, 2], [30]))],
      "retries",
    );
    expect(out.map((e) => (e.data as { response_token_ids: number[] }).response_token_ids)).toEqual([[10], [30]]);
  });

  it("drops an earlier call with the same agent request id, even a successful one", () => {
    const out = toTripletEvents(
      [
        event("model_request", modelRequest([1, 2], [10], { agent_request_id: "req-1" })),
        event("model_request", modelRequest([5], [11], { agent_request_id: "req-2" })),
        event("model_request", modelRequest([1, 2], [12], { agent_request_id: "req-1" })),
      ],
      "retries",
    );
    const calls = out.map((e) => e.data as { response_token_ids: number[]; deduped_retries?: number });
    expect(calls.map((c) => c.response_token_ids)).toEqual([[11], [12]]);
    expect(calls[1]?.deduped_retries).toBe(1);
  });

  it("does not merge prompts that differ only by order or by a prefix", () => {
    const failed = { status: "error", http_status: 502 };
    const out = toTripletEvents(
      [
        event("model_request", modelRequest([1, 2], [1], failed)),
        event("model_request", modelRequest([2, 1], [2])),
        event("model_request", modelRequest([1, 2, 3], [3])),
        event("model_request", modelRequest([12], [4])),
        event("model_request", modelRequest([1, 2], [5])),
      ],
      "retries",
    );
    expect(out.map((e) => (e.data as { response_token_ids: number[] }).response_token_ids)).toEqual([
      [2],
      [3],
      [4],
      [5],
    ]);
  });

  it("never merges failed calls that captured no prompt ids", () => {
    const failed = { response: {}, http_status: 500, status: "error", error: "boom" };
    const out = toTripletEvents([event("model_request", failed), event("model_request", failed)], "retries");
    expect(out).toHaveLength(2);
  });

  it("passes other event types through unchanged and keeps event fields", () => {
    const log = event("log", { message: "hello", level: "info" });
    const custom = event("tool_call", { name: "search", args: { q: "x" } });
    const out = toTripletEvents([log, custom], "retries");
    expect(out).toEqual([log, custom]);
  });

  it("does not mutate its input", () => {
    const input = [event("reward", { value: 1, extra: true })];
    const copy = structuredClone(input);
    toTripletEvents(input);
    expect(input).toEqual(copy);
  });

  it("returns an empty list for no events", () => {
    expect(toTripletEvents([], "retries")).toEqual([]);
  });
});

describe("toTripletEvents by prompt (Agent Lightning v1.0, the wire default)", () => {
  it("keeps only the last call per identical prompt, in its own place (AGL's duplicate-prompt case)", () => {
    const out = toTripletEvents([
      event("model_request", modelRequest([1, 2], [10])),
      event("reward", { value: 0.5 }),
      event("model_request", modelRequest([3, 4], [20])),
      event("model_request", modelRequest([1, 2], [30])),
    ]);
    expect(out.map((e) => e.event_type)).toEqual(["reward", "model_request", "model_request"]);
    const calls = out.slice(1).map((e) => e.data as { prompt_token_ids: number[]; response_token_ids: number[] });
    expect(calls.map((c) => c.prompt_token_ids)).toEqual([
      [3, 4],
      [1, 2],
    ]);
    expect(calls.map((c) => c.response_token_ids)).toEqual([[20], [30]]);
    expect(out.some((e) => "deduped_retries" in e.data)).toBe(false);
  });

  it("is the default", () => {
    const events = [event("model_request", modelRequest([1], [1])), event("model_request", modelRequest([1], [2]))];
    expect(toTripletEvents(events)).toEqual(toTripletEvents(events, "prompt"));
    expect(toTripletEvents(events)).toHaveLength(1);
  });

  it("merges calls with different agent request ids when their prompts are equal", () => {
    const out = toTripletEvents(
      [
        event("model_request", modelRequest([1, 2], [10], { agent_request_id: "a" })),
        event("model_request", modelRequest([1, 2], [11], { agent_request_id: "b" })),
      ],
      "prompt",
    );
    expect(out.map((e) => (e.data as { response_token_ids: number[] }).response_token_ids)).toEqual([[11]]);
  });

  it("never merges calls that captured no prompt ids", () => {
    const failed = { response: {}, http_status: 500, status: "error", error: "boom" };
    expect(toTripletEvents([event("model_request", failed), event("model_request", failed)], "prompt")).toHaveLength(2);
  });
});
