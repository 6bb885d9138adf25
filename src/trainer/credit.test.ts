import { describe, expect, it } from "vitest";
import { callReturns, rolloutValue, scoreRow } from "./credit.js";
import type { TrainingRow } from "./training-row.js";

describe("callReturns", () => {
  // A rollout of 3 calls, final reward R = 1, call rewards r = [-0.5, 0, 0.25].
  const r = [-0.5, 0, 0.25];

  it("broadcast: every call gets R + Σ r", () => {
    expect(callReturns(1, r, "broadcast", 1)).toEqual([0.75, 0.75, 0.75]);
  });

  it("broadcast without call rewards is the final reward on every call (today's behaviour)", () => {
    expect(callReturns(1, [0, 0], "broadcast", 0.5)).toEqual([1, 1]);
  });

  it("per_call: R + the call's own reward", () => {
    expect(callReturns(1, r, "per_call", 1)).toEqual([0.5, 1, 1.25]);
  });

  it("discounted: G_t = r_t + γ G_{t+1}, R arriving with the last call", () => {
    // γ = 0.5: G_2 = 0.25 + 1 = 1.25; G_1 = 0 + 0.5·1.25 = 0.625; G_0 = −0.5 + 0.5·0.625 = −0.1875.
    expect(callReturns(1, r, "discounted", 0.5)).toEqual([-0.1875, 0.625, 1.25]);
  });

  it("discounted with γ = 1 sums the rewards that follow", () => {
    expect(callReturns(1, r, "discounted", 1)).toEqual([0.75, 1.25, 1.25]);
  });

  it("gives a rollout without calls no returns", () => {
    expect(callReturns(1, [], "discounted", 0.9)).toEqual([]);
  });
});

describe("rolloutValue", () => {
  it("is the mean return, or R without calls", () => {
    expect(rolloutValue(1, [0.5, 1, 1.25])).toBeCloseTo(0.916667, 6);
    expect(rolloutValue(0.3, [])).toBe(0.3);
  });
});

function row(turns: number[], tokenTurns: number[] | undefined, lossMask: number[]): TrainingRow {
  return {
    rolloutId: "r",
    dataId: "d",
    promptTokenIds: [1],
    responseTokenIds: lossMask.map((_, i) => 10 + i),
    lossMask,
    oldLogprobs: lossMask.map(() => null),
    policyVersions: [0],
    turns,
    ...(tokenTurns ? { tokenTurns } : {}),
  };
}

describe("scoreRow", () => {
  const baseline = { baseline: 0.5, scale: 2 };

  it("gives a one-call row the scalar (G_t − b) / s of its call", () => {
    const scored = scoreRow(row([1], undefined, [1, 1]), [0, 1.5], baseline);
    expect(scored.advantage).toBe(0.5);
    expect(scored.tokenAdvantages).toBeUndefined();
  });

  it("gives a merged row each call's advantage on that call's tokens, 0 on context", () => {
    // Tokens: call 0 (2 tokens), context (1), call 1 (1). G = [1.5, −0.5] → A = [0.5, −0.5].
    const scored = scoreRow(row([0, 1], [0, 0, -1, 1], [1, 1, 0, 1]), [1.5, -0.5], baseline);
    expect(scored.advantage).toBe(0.5);
    expect(scored.tokenAdvantages).toEqual([0.5, 0.5, 0, -0.5]);
  });

  it("keeps a merged row scalar when its calls' advantages are equal", () => {
    const scored = scoreRow(row([0, 1], [0, -1, 1], [1, 0, 1]), [1, 1], baseline);
    expect(scored.tokenAdvantages).toBeUndefined();
    expect(scored.advantage).toBe(0.25);
  });
});
