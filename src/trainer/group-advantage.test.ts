import { describe, expect, it } from "vitest";
import { type AdvantageOptions, broadcastAdvantage, computeBatchAdvantages } from "./group-advantage.js";

const GRPO: AdvantageOptions = {
  estimator: "grpo",
  normByStd: false,
  rolloutLevel: true,
  reinforceBaseline: "batch_mean",
};

function sample(rolloutId: string, dataId: string, reward: number, rowCount = 1) {
  return { rolloutId, dataId, reward, rowCount };
}

describe("computeBatchAdvantages", () => {
  it("normalises each group on its own", () => {
    const out = computeBatchAdvantages(
      [sample("a1", "A", 1), sample("b1", "B", 10), sample("a2", "A", 0), sample("b2", "B", 20)],
      GRPO,
    );
    expect(Object.fromEntries(out.advantageByRollout)).toEqual({ a1: 0.5, a2: -0.5, b1: -5, b2: 5 });
    expect(out.groups).toBe(2);
    expect(out.zeroVarianceGroups).toBe(0);
  });

  it("leaves a rollout with a reward but no rows out of its group's statistics and counts it", () => {
    // With r3 (reward 1, no rows) counted, the mean would be 2/3; without it the mean is 0.5.
    const out = computeBatchAdvantages([sample("r1", "A", 1), sample("r2", "A", 0), sample("r3", "A", 1, 0)], GRPO);
    expect(out.excludedFromStats).toBe(1);
    expect(out.advantageByRollout.has("r3")).toBe(false);
    expect(out.advantageByRollout.get("r1")).toBe(0.5);
    expect(out.advantageByRollout.get("r2")).toBe(-0.5);
  });

  it("counts zero-variance groups, which contribute zero advantages", () => {
    const out = computeBatchAdvantages(
      [sample("a1", "A", 1), sample("a2", "A", 1), sample("b1", "B", 0), sample("b2", "B", 1)],
      { ...GRPO, normByStd: true },
    );
    expect(out.zeroVarianceGroups).toBe(1);
    expect(out.advantageByRollout.get("a1")).toBe(0);
    expect(out.advantageByRollout.get("a2")).toBe(0);
    expect(out.advantageByRollout.get("b2")).toBeGreaterThan(0);
  });

  it("does not count a group whose rollouts all lack rows", () => {
    const out = computeBatchAdvantages([sample("a1", "A", 1, 0), sample("a2", "A", 0, 0)], GRPO);
    expect(out.groups).toBe(0);
    expect(out.zeroVarianceGroups).toBe(0);
    expect(out.excludedFromStats).toBe(2);
  });

  it("counts a group left with one rollout that has rows as zero-variance", () => {
    const out = computeBatchAdvantages([sample("a1", "A", 1), sample("a2", "A", 0, 0)], { ...GRPO, normByStd: true });
    expect(out.zeroVarianceGroups).toBe(1);
    expect(out.advantageByRollout.get("a1")).toBe(0);
  });

  it("weighs a rollout once per row when statistics are row-level", () => {
    // Rollout level: mean of [1, 0] = 0.5. Row level: mean of [1, 1, 1, 0] = 0.75, std = sqrt(0.75 / 3) = 0.5.
    const samples = [sample("many", "A", 1, 3), sample("one", "A", 0, 1)];
    const rolloutLevel = computeBatchAdvantages(samples, GRPO);
    expect(Object.fromEntries(rolloutLevel.advantageByRollout)).toEqual({ many: 0.5, one: -0.5 });
    const rowLevel = computeBatchAdvantages(samples, { ...GRPO, rolloutLevel: false });
    expect(Object.fromEntries(rowLevel.advantageByRollout)).toEqual({ many: 0.25, one: -0.75 });
    const rowLevelStd = computeBatchAdvantages(samples, { ...GRPO, rolloutLevel: false, normByStd: true });
    expect(rowLevelStd.advantageByRollout.get("many")).toBeCloseTo(0.499999, 6);
    expect(rowLevelStd.advantageByRollout.get("one")).toBeCloseTo(-1.499997, 6);
  });

  it("applies RLOO per group", () => {
    const out = computeBatchAdvantages([sample("a", "A", 3), sample("b", "A", 1), sample("c", "A", 2)], {
      ...GRPO,
      estimator: "rloo",
    });
    expect(Object.fromEntries(out.advantageByRollout)).toEqual({ a: 1.5, b: -1.5, c: 0 });
  });

  it("applies REINFORCE over the whole batch, so an all-equal group still gets a signal", () => {
    const out = computeBatchAdvantages(
      [sample("a1", "A", 1), sample("a2", "A", 1), sample("b1", "B", 0), sample("b2", "B", 0)],
      { ...GRPO, estimator: "reinforce" },
    );
    expect(Object.fromEntries(out.advantageByRollout)).toEqual({ a1: 0.5, a2: 0.5, b1: -0.5, b2: -0.5 });
    expect(out.zeroVarianceGroups).toBe(2);
  });
});

describe("broadcastAdvantage", () => {
  it("puts the advantage on mask-1 tokens only", () => {
    expect(broadcastAdvantage([0, 1, 1, 0, 1], -0.5)).toEqual([0, -0.5, -0.5, 0, -0.5]);
  });
});
