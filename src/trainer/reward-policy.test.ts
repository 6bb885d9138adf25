import { describe, expect, it } from "vitest";
import { applyRewardPolicy, findRewardTarget } from "./reward-policy.js";

// Three calls: ids as a rollout records them (response id, agent request id), and the span each was made in.
const CALLS = [
  { callIds: ["chatcmpl-a"], spanIds: ["s-write", "s-root"] },
  { callIds: ["chatcmpl-b", "req-2"], spanIds: ["s-check", "s-root"] },
  { callIds: ["chatcmpl-c"], spanIds: ["s-write", "s-root"] },
];

describe("findRewardTarget", () => {
  it("finds a call by any of its ids", () => {
    expect(findRewardTarget("chatcmpl-b", CALLS)).toBe(1);
    expect(findRewardTarget("req-2", CALLS)).toBe(1);
  });

  it("gives a span's reward to the last call made inside it", () => {
    expect(findRewardTarget("s-write", CALLS)).toBe(2);
    expect(findRewardTarget("s-root", CALLS)).toBe(2);
    expect(findRewardTarget("s-check", CALLS)).toBe(1);
  });

  it("returns -1 for an id no call has", () => {
    expect(findRewardTarget("nope", CALLS)).toBe(-1);
  });
});

describe("applyRewardPolicy", () => {
  const events = [
    { sequence: 2, value: 0.5, callId: "chatcmpl-a" },
    { sequence: 4, value: 0.25 },
    { sequence: 6, value: -1, callId: "gone" },
    { sequence: 8, value: 1 },
  ];

  it("last: the last event is the final reward, call ids ignored, earlier events counted as overridden", () => {
    expect(applyRewardPolicy(events, CALLS, "last")).toEqual({
      final: 1,
      callRewards: [0, 0, 0],
      attached: 0,
      unmatched: 0,
      overridden: 3,
    });
  });

  it("sum: every event adds up", () => {
    expect(applyRewardPolicy(events, CALLS, "sum").final).toBe(0.75);
  });

  it("per_call: events naming a call reward it, unknown ids are counted, the last plain event is final", () => {
    expect(applyRewardPolicy(events, CALLS, "per_call")).toEqual({
      final: 1,
      callRewards: [0.5, 0, 0],
      attached: 1,
      unmatched: 1,
      overridden: 1,
    });
  });

  it("per_call with only call rewards leaves the final reward to reward_fillna", () => {
    const out = applyRewardPolicy([{ sequence: 1, value: 2, callId: "chatcmpl-c" }], CALLS, "per_call");
    expect(out.final).toBeNull();
    expect(out.callRewards).toEqual([0, 0, 2]);
  });

  it("gives no final reward to a rollout without events, under every policy", () => {
    for (const policy of ["last", "sum", "per_call"] as const)
      expect(applyRewardPolicy([], CALLS, policy).final).toBeNull();
  });
});
