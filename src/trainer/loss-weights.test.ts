import { describe, expect, it } from "vitest";
import {
  engineAggregation,
  perRolloutMeanWeights,
  tokenSumNormalizer,
  truncatedIsWeights,
  weightedLoss,
  withTruncatedIs,
} from "./loss-weights.js";
import type { ScoredRow, TrainingRow } from "./training-row.js";

function row(rolloutId: string, lossMask: number[]): TrainingRow {
  return {
    rolloutId,
    dataId: "d",
    promptTokenIds: [1],
    responseTokenIds: lossMask.map(() => 2),
    lossMask,
    oldLogprobs: lossMask.map(() => null),
    policyVersions: [0],
    turns: [0],
  };
}

const ones = (n: number) => new Array<number>(n).fill(1);

describe("per-rollout-mean", () => {
  it("weighs a rollout of 3 rows and 30 tokens exactly as one of 1 row and 5 tokens", () => {
    const rows = [row("long", ones(10)), row("long", ones(10)), row("long", ones(10)), row("short", ones(5))];
    const weights = perRolloutMeanWeights(rows);
    expect(weights).toEqual([1 / 30, 1 / 30, 1 / 30, 1 / 5]);
    // Total weight of each rollout, Σ over its masked tokens: 30 · 1/30 = 1 and 5 · 1/5 = 1.
    // Losses: every token of "long" has loss 1, every token of "short" has loss 3.
    const losses = rows.map((r) => r.lossMask.map(() => (r.rolloutId === "long" ? 1 : 3)));
    const masks = rows.map((r) => r.lossMask);
    // per-rollout-mean: (mean 1 + mean 3) / 2 = 2
    expect(weightedLoss(losses, masks, weights)).toBeCloseTo(2, 12);
    // token-mean: (30 · 1 + 5 · 3) / 35 = 45 / 35, "long" weighs 6× as much
    expect(weightedLoss(losses, masks, ones(4))).toBeCloseTo(45 / 35, 12);
  });

  it("counts only mask-1 tokens, so context tokens do not dilute a rollout's weight", () => {
    const weights = perRolloutMeanWeights([row("a", [1, 0, 0, 1]), row("a", [0, 1]), row("b", [1, 1])]);
    expect(weights).toEqual([1 / 3, 1 / 3, 1 / 2]);
    // Context losses (mask 0) must not enter: a's masked losses are 2, 4, 6 (mean 4); b's are 1, 1 (mean 1).
    const loss = weightedLoss(
      [
        [2, 100, 100, 4],
        [100, 6],
        [1, 1],
      ],
      [
        [1, 0, 0, 1],
        [0, 1],
        [1, 1],
      ],
      weights,
    );
    expect(loss).toBeCloseTo(2.5, 12);
  });

  it("maps the loss aggregation onto the engine's", () => {
    expect(engineAggregation("per-rollout-mean")).toBe("weighted");
    expect(engineAggregation("token-mean")).toBe("token-mean");
    expect(weightedLoss([[1]], [[0]], [1])).toBe(0);
  });
});

describe("truncated importance sampling", () => {
  it("weighs each masked token by min(exp(logp_old − logp_sampler), cap)", () => {
    const tis = truncatedIsWeights([-1, null, -2, -3, null], [-1.5, -9, -1, -3, -4], [1, 0, 1, 1, 1], 2);
    // t0: exp(−0.5) = 0.6065; t1: context → 1; t2: exp(1) = 2.718 → capped at 2; t3: exp(0) = 1; t4: unknown → 1
    expect(tis.isWeights[0]).toBeCloseTo(Math.exp(-0.5), 12);
    expect(tis.isWeights.slice(1)).toEqual([1, 2, 1, 1]);
    expect(tis.cappedTokens).toBe(1);
    expect(tis.unknownTokens).toBe(1);
  });

  it("rejects a cap below 1 and arrays of different lengths", () => {
    expect(() => truncatedIsWeights([0], [0], [1], 0.5)).toThrow(RangeError);
    expect(() => truncatedIsWeights([0], [0, 0], [1], 2)).toThrow(RangeError);
  });

  it("switches a row to the recomputed old logprobs and attaches the weights", () => {
    const scored: ScoredRow = { ...row("a", [1, 0, 1]), oldLogprobs: [-1, null, -1], advantage: 1 };
    const out = withTruncatedIs(scored, [-1, -2, -0.5], 1.5);
    expect(out.row.oldLogprobs).toEqual([-1, -2, -0.5]);
    expect(out.row.isWeights).toEqual([1, 1, 1.5]);
    expect(out.cappedTokens).toBe(1);
    expect(scored.oldLogprobs).toEqual([-1, null, -1]);
  });
});

describe("Dr. GRPO's constant normaliser", () => {
  it("is the update's distinct rollouts times the fixed length, whatever the rows' lengths", () => {
    expect(tokenSumNormalizer(["a", "a", "a", "b"], 80)).toBe(160);
    expect(tokenSumNormalizer(["a"], 80)).toBe(80);
    expect(() => tokenSumNormalizer(["a"], 0)).toThrow(RangeError);
  });

  it("maps to the engine's constant aggregation", () => {
    expect(engineAggregation("token-sum-norm")).toBe("constant");
    expect(engineAggregation("per-rollout-mean")).toBe("weighted");
    expect(engineAggregation("token-mean")).toBe("token-mean");
  });
});
