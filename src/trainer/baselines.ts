/**
 * @module The baseline and scale each rollout's advantage is measured against, so that per-call returns can share
 * the rollout-level group statistics: advantage = (value − baseline) / scale, where for a rollout's own reward this
 * is exactly what group-advantage.ts computes (GRPO, RLOO, REINFORCE; rollout- or row-level statistics).
 */
import { isZeroVariance, mean, STD_EPSILON, sampleStd } from "./advantage.js";
import { type AdvantageOptions, groupSamples, type RolloutSample, statisticsRewards } from "./group-advantage.js";

/** What one rollout's values are compared with. */
export interface Baseline {
  /** Subtracted from each value. */
  baseline: number;
  /** Divided into the difference (1 unless GRPO with `normByStd` on a group with spread). */
  scale: number;
}

/** Baselines of one group's rollouts under GRPO or RLOO (entries = the statistics vector of the group). */
function groupBaselines(members: readonly RolloutSample[], options: AdvantageOptions): Map<string, Baseline> {
  const entries = statisticsRewards(members, options.rolloutLevel);
  const out = new Map<string, Baseline>();
  const flat = isZeroVariance(entries);
  if (options.estimator === "grpo") {
    const scale = options.normByStd && !flat ? sampleStd(entries) + STD_EPSILON : 1;
    const baseline = mean(entries);
    for (const s of members) out.set(s.rolloutId, { baseline, scale });
    return out;
  }
  // RLOO: the mean of the group's other entries; a group of one (or all equal) is its own baseline.
  const total = entries.reduce((sum, r) => sum + r, 0);
  const others = entries.length - 1;
  for (const s of members) {
    out.set(s.rolloutId, { baseline: flat ? s.reward : (total - s.reward) / others, scale: 1 });
  }
  return out;
}

/**
 * The baseline of every rollout that has rows: (1) group the rollouts with rows by `dataId`; (2) GRPO: the group's
 * mean, and its std + 1e-6 as scale under `normByStd` (scale 1 when every value is equal); RLOO: the mean of the
 * group's other entries; REINFORCE: the batch mean (`batch_mean`) or 0 (`none`), scale 1.
 * Then (reward − baseline) / scale equals {@link computeBatchAdvantages}'s advantage for every rollout (zero-variance
 * groups: reward − baseline = 0).
 * @param samples - every rollout of the batch with its statistic value (`reward`) and row count
 * @param options - estimator and statistics level
 * @returns rollout id → baseline and scale; rollouts without rows are absent
 * @see DeepSeekMath, arXiv:2402.03300 §4.1.2–4.1.3 (GRPO outcome and process supervision); advantage.ts
 */
export function computeBatchBaselines(
  samples: readonly RolloutSample[],
  options: AdvantageOptions,
): Map<string, Baseline> {
  const groups = [...groupSamples(samples).values()];
  if (options.estimator !== "reinforce") {
    return new Map(groups.flatMap((members) => [...groupBaselines(members, options)]));
  }
  const all = groups.flatMap((members) => statisticsRewards(members, options.rolloutLevel));
  const baseline = options.reinforceBaseline === "none" || all.length === 0 ? 0 : mean(all);
  return new Map(groups.flat().map((s) => [s.rolloutId, { baseline, scale: 1 }]));
}
