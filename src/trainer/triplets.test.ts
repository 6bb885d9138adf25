import { describe, expect, it } from "vitest";
import { agentFilter } from "../protocol/agent-match.js";
import { extractTriplets, type TripletEventFields } from "./triplets.js";

function modelRequest(sequence: number, data: Record<string, unknown>): TripletEventFields {
  return {
    event_type: "model_request",
    sequence,
    data: {
      prompt_token_ids: [1, 2],
      response_token_ids: [3, 4],
      response_log_probs: [-0.5, -0.25],
      server: { model: "m", version: 2 },
      ...data,
    },
  };
}

function reward(sequence: number, value: unknown): TripletEventFields {
  return { event_type: "reward", sequence, data: { value } };
}

describe("extractTriplets", () => {
  it("keeps usable model calls in sequence order, numbering turns among them", () => {
    const out = extractTriplets(
      "r1",
      "d1",
      [
        modelRequest(3, { prompt_token_ids: [9] }),
        modelRequest(1, {}),
        { event_type: "log", sequence: 2, data: { msg: "x" } },
      ],
      0,
    );
    expect(out.calls).toEqual([
      {
        turn: 0,
        sequence: 1,
        promptTokenIds: [1, 2],
        responseTokenIds: [3, 4],
        logprobs: [-0.5, -0.25],
        policyVersion: 2,
      },
      {
        turn: 1,
        sequence: 3,
        promptTokenIds: [9],
        responseTokenIds: [3, 4],
        logprobs: [-0.5, -0.25],
        policyVersion: 2,
      },
    ]);
  });

  it("skips error calls and incompletely captured calls, counting each", () => {
    const out = extractTriplets(
      "r1",
      "d1",
      [
        modelRequest(1, { status: "error", http_status: 400, response_token_ids: [] }),
        modelRequest(2, { capture_incomplete: true }),
        modelRequest(3, { capture_incomplete: true }),
        modelRequest(4, { status: "ok" }),
      ],
      0,
    );
    expect(out.errorCalls).toBe(1);
    expect(out.incompleteCalls).toBe(2);
    expect(out.calls.map((c) => c.sequence)).toEqual([4]);
    expect(out.calls[0]!.turn).toBe(0);
  });

  it("counts model calls and rewards without the triplet shape as malformed", () => {
    const out = extractTriplets(
      "r1",
      "d1",
      [modelRequest(1, { response_token_ids: "abc" }), modelRequest(2, { server: undefined }), reward(3, "high")],
      -1,
    );
    expect(out.malformedEvents).toBe(3);
    expect(out.calls).toEqual([]);
    expect(out.rewardFilled).toBe(true);
  });

  it("treats logprobs that do not line up with the response ids as unknown", () => {
    const out = extractTriplets("r1", "d1", [modelRequest(1, { response_log_probs: [-1] })], 0);
    expect(out.calls[0]!.logprobs).toBeNull();
    const missing = extractTriplets("r1", "d1", [modelRequest(1, { response_log_probs: null })], 0);
    expect(missing.calls[0]!.logprobs).toBeNull();
  });

  it("takes the last reward event by sequence", () => {
    const out = extractTriplets("r1", "d1", [reward(5, 0.25), reward(2, 1), modelRequest(1, {})], 0);
    expect(out.reward).toBe(0.25);
    expect(out.rewardFilled).toBe(false);
  });

  it("fills a missing reward with the configured value and says so", () => {
    const out = extractTriplets("r1", "d1", [modelRequest(1, {})], -0.5);
    expect(out.reward).toBe(-0.5);
    expect(out.rewardFilled).toBe(true);
    expect(out.rolloutId).toBe("r1");
    expect(out.dataId).toBe("d1");
  });
});

describe("extractTriplets with an agent filter", () => {
  const events = [
    modelRequest(1, { agent_name: "planner" }),
    modelRequest(2, { agent_name: "coder" }),
    modelRequest(3, {}),
    reward(4, 1),
  ];

  it("keeps only the named agents' calls, numbering turns among them, and keeps the reward", () => {
    const out = extractTriplets("r", "d", events, 0, { agents: agentFilter(["coder"]) });
    expect(out.calls.map((c) => [c.turn, c.sequence, c.agentName])).toEqual([[0, 2, "coder"]]);
    expect(out.reward).toBe(1);
  });

  it("keeps every call, with its agent name, when no filter is given", () => {
    const out = extractTriplets("r", "d", events, 0);
    expect(out.calls.map((c) => c.agentName)).toEqual(["planner", "coder", undefined]);
  });
});
