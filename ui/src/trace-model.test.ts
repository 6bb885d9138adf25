import { describe, expect, it } from "vitest";
import { MISMATCH_CALLS, modelRequestData } from "../../src/gateway/testing/trace-fixture.js";
import type { Event } from "../../src/protocol/event.js";
import { layoutLines } from "./token-view.js";
import { buildTrace } from "./trace-model.js";

/** Stored events of the seeded two-call rollout plus a reward, a log and an error call. */
function events(): Event[] {
  const base = { rollout_id: "r", attempt_id: "0", timestamp: 1, event_id: null };
  return [
    { ...base, sequence: 1, event_type: "model_request", data: modelRequestData(MISMATCH_CALLS[0]!) },
    { ...base, sequence: 2, event_type: "log", data: { msg: "tool ran" } },
    { ...base, sequence: 3, event_type: "model_request", data: modelRequestData(MISMATCH_CALLS[1]!) },
    {
      ...base,
      sequence: 4,
      event_type: "model_request",
      data: { model: "policy", model_version: 0, status: "error", http_status: 502, latency_ms: 3, error: "boom" },
    },
    { ...base, sequence: 5, event_type: "reward", data: { value: 0.5, source: "judge" } },
  ];
}

describe("buildTrace", () => {
  it("reports the merge break with the two differing tokens, as the trainer's aggregator finds it", () => {
    const trace = buildTrace("r", "d", events());
    expect(trace.rows).toHaveLength(2);
    expect(trace.mismatches).toEqual([
      { rolloutId: "r", turn: 1, position: 4, kind: "token_differs", callSequence: 3, expected: 11, got: 99 },
    ]);
  });

  it("keeps each response token's logprob and text, and learns token texts from responses", () => {
    const trace = buildTrace("r", "d", events());
    expect(trace.calls[0]?.logprobs).toEqual([-0.25, -1.5]);
    expect(trace.tokenText.get(11)).toBe("llo");
    expect(trace.tokenText.has(99)).toBe(false);
  });

  it("marks the error call as skipped by the trainer and attaches the reward after the last call", () => {
    const trace = buildTrace("r", "d", events());
    expect(trace.calls.map((c) => [c.sequence, c.turn, c.status])).toEqual([
      [1, 0, "ok"],
      [3, 1, "ok"],
      [4, null, "error"],
    ]);
    expect(trace.rewards).toEqual([{ sequence: 5, value: 0.5, source: "judge", reason: null, afterCall: 4 }]);
    expect(trace.finalReward).toBe(0.5);
    expect(trace.others.map((e) => e.event_type)).toEqual(["log"]);
  });
});

describe("buildTrace spans", () => {
  const span = (sequence: number, id: string, parent: string | null, name: string, startNs: number) => ({
    rollout_id: "r",
    attempt_id: "0",
    timestamp: 1,
    event_id: null,
    sequence,
    event_type: "span",
    data: {
      name,
      span_id: id,
      parent_span_id: parent,
      start_time_unix_nano: String(startNs),
      end_time_unix_nano: String(startNs + 2_000_000),
      status: { code: "ok", message: "" },
      attributes: name === "agent.run" ? { "gen_ai.agent.name": "planner" } : {},
    },
  });

  it("orders spans depth-first, children by start time, with depth and agent name", () => {
    const events = [
      span(1, "b".repeat(16), "a".repeat(16), "tool.late", 3_000_000),
      span(2, "a".repeat(16), null, "agent.run", 1_000_000),
      span(3, "c".repeat(16), "a".repeat(16), "tool.early", 2_000_000),
    ];
    const spans = buildTrace("r", "d", events).spans;
    expect(spans.map((s) => [s.name, s.depth, s.agentName])).toEqual([
      ["agent.run", 0, "planner"],
      ["tool.early", 1, null],
      ["tool.late", 1, null],
    ]);
    expect(spans[0]?.durationMs).toBe(2);
  });
});

describe("layoutLines", () => {
  it("wraps at the column limit and breaks after a newline token", () => {
    // "ab" "cd" "e\n"(shown 2 wide) "fgh" with 4 columns: [ab cd] [e↵] [fgh]
    expect([...layoutLines(["ab", "cd", "e↵", "fgh"], [false, false, true, false], 4)]).toEqual([0, 2, 3, 4]);
  });

  it("gives an over-long token a line of its own", () => {
    expect([...layoutLines(["a", "bbbbbb", "c"], [false, false, false], 4)]).toEqual([0, 1, 2, 3]);
  });
});
