import { describe, expect, it } from "vitest";
import { computeBatchBaselines } from "./baselines.js";
import { type AdvantageOptions, computeBatchAdvantages } from "./group-advantage.js";

const samples = [
  { rolloutId: "a1", dataId: "A", reward: 1, rowCount: 2 },
  { rolloutId: "a2", dataId: "A", reward: 0, rowCount: 1 },
  { rolloutId: "a3", dataId: "A", reward: 0.5, rowCount: 3 },
  { rolloutId: "b1", dataId: "B", reward: 2, rowCount: 1 },
  { rolloutId: "b2", dataId: "B", reward: 2, rowCount: 1 },
  { rolloutId: "c1", dataId: "C", reward: 3, rowCount: 1 },
  { rolloutId: "x", dataId: "A", reward: 9, rowCount: 0 },
];

const cases: [string, AdvantageOptions][] = [];
for (const estimator of ["grpo", "rloo", "reinforce"] as const) {
  for (const rolloutLevel of [true, false]) {
    for (const normByStd of [true, false]) {
      cases.push([
        `${estimator} rollout_level=${rolloutLevel} norm_by_std=${normByStd}`,
        { estimator, rolloutLevel, normByStd, reinforceBaseline: "batch_mean" },
      ]);
    }
  }
}
cases.push([
  "reinforce without baseline",
  { estimator: "reinforce", rolloutLevel: true, normByStd: false, reinforceBaseline: "none" },
]);

describe("computeBatchBaselines", () => {
  it.each(cases)("(reward − baseline) / scale is the rollout advantage: %s", (_name, options) => {
    const advantages = computeBatchAdvantages(samples, options).advantageByRollout;
    const baselines = computeBatchBaselines(samples, options);
    expect([...baselines.keys()].sort()).toEqual([...advantages.keys()].sort());
    for (const s of samples) {
      const b = baselines.get(s.rolloutId);
      if (b === undefined) continue;
      expect((s.reward - b.baseline) / b.scale).toBeCloseTo(advantages.get(s.rolloutId) as number, 12);
    }
  });

  it("uses the group mean and std for GRPO, by hand", () => {
    // Group A rollout level: [1, 0, 0.5], mean 0.5, unbiased std 0.5 → scale 0.500001.
    const b = computeBatchBaselines(samples, {
      estimator: "grpo",
      rolloutLevel: true,
      normByStd: true,
      reinforceBaseline: "none",
    });
    expect(b.get("a1")?.baseline).toBe(0.5);
    expect(b.get("a1")?.scale).toBeCloseTo(0.500001, 9);
    // Group B is flat: scale 1, so per-call returns around its mean keep their sign and size.
    expect(b.get("b1")).toEqual({ baseline: 2, scale: 1 });
  });
});
