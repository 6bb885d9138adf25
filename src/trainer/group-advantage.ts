/**
 * @module Rollout-level advantages for a batch: rollouts grouped by `dataId`, rollouts without trainable rows left out
 * of the statistics, the configured estimator applied per group (per batch for REINFORCE), and the per-rollout scalar
 * broadcast onto each row's own loss mask.
 */
import { grpoAdvantages, isZeroVariance, reinforceAdvantages, rlooAdvantages } from "./advantage.js";

/** What the advantage of one rollout depends on. */
export interface RolloutSample {
  rolloutId: string;
  /** Group id: rollouts of one input share it. */
  dataId: string;
  /** Final reward (already filled when missing). */
  reward: number;
  /** Training rows the rollout produced after aggregation and length limits. */
  rowCount: number;
}

/** Which estimator, and over what. */
export interface AdvantageOptions {
  estimator: "grpo" | "rloo" | "reinforce";
  /** GRPO only: divide by (std + 1e-6). */
  normByStd: boolean;
  /** true: statistics over rollouts (one entry each); false: over rows (a rollout's reward once per row). */
  rolloutLevel: boolean;
  /** REINFORCE only: subtract the batch mean, or nothing. */
  reinforceBaseline: "batch_mean" | "none";
}

/** Advantages of a batch and what the statistics saw. */
export interface BatchAdvantages {
  /** One scalar per rollout that has rows; rollouts without rows are absent. */
  advantageByRollout: Map<string, number>;
  /** Groups with at least one rollout that has rows. */
  groups: number;
  /** Of those, groups whose rewards are all equal (GRPO/RLOO: every advantage 0). */
  zeroVarianceGroups: number;
  /** Rollouts with a reward but no trainable rows, left out of their group's statistics. */
  excludedFromStats: number;
}

/**
 * The rollouts of each group that have rows, groups in first-seen order.
 * @param samples - the batch's rollouts
 * @returns group id → its rollouts with rows (rollouts without rows left out)
 */
export function groupSamples(samples: readonly RolloutSample[]): Map<string, RolloutSample[]> {
  const groups = new Map<string, RolloutSample[]>();
  for (const sample of samples) {
    if (sample.rowCount === 0) continue;
    const members = groups.get(sample.dataId) ?? [];
    members.push(sample);
    groups.set(sample.dataId, members);
  }
  return groups;
}

/**
 * The reward vector the statistics see: one entry per rollout, or one per row of each rollout.
 * @param members - one group's rollouts with rows
 * @param rolloutLevel - one entry per rollout (true) or per row (false)
 * @returns the rewards, [entries]
 */
export function statisticsRewards(members: readonly RolloutSample[], rolloutLevel: boolean): number[] {
  return members.flatMap((s) => new Array<number>(rolloutLevel ? 1 : s.rowCount).fill(s.reward));
}

/** Applies a per-entry estimator result back to rollouts (entries of one rollout share its reward, so its value). */
function assignBack(members: readonly RolloutSample[], advantages: readonly number[], rolloutLevel: boolean) {
  const out = new Map<string, number>();
  let index = 0;
  for (const s of members) {
    out.set(s.rolloutId, advantages[index] ?? 0);
    index += rolloutLevel ? 1 : s.rowCount;
  }
  return out;
}

/**
 * Computes one advantage per rollout: (1) leave out rollouts with no rows (counted); (2) group the rest by `dataId`;
 * (3) build each group's reward vector, over rollouts or over rows; (4) apply GRPO or RLOO per group, REINFORCE over
 * all groups' vectors at once; (5) give each rollout the value of its entries (all equal, as they share its reward).
 * @param samples - every rollout of the batch with its reward and row count
 * @param options - estimator and statistics level
 * @returns the advantage of each rollout that has rows, and the group counts
 * @see advantage.ts for each estimator's formula and source
 */
export function computeBatchAdvantages(samples: readonly RolloutSample[], options: AdvantageOptions): BatchAdvantages {
  const groups = groupSamples(samples);
  const result: BatchAdvantages = {
    advantageByRollout: new Map(),
    groups: groups.size,
    zeroVarianceGroups: 0,
    excludedFromStats: samples.filter((s) => s.rowCount === 0).length,
  };
  const members = [...groups.values()];
  const vectors = members.map((m) => statisticsRewards(m, options.rolloutLevel));
  for (const vector of vectors) if (isZeroVariance(vector)) result.zeroVarianceGroups += 1;
  const advantageVectors =
    options.estimator === "reinforce"
      ? splitLike(reinforceAdvantages(vectors.flat(), options.reinforceBaseline), vectors)
      : vectors.map((v) => (options.estimator === "grpo" ? grpoAdvantages(v, options.normByStd) : rlooAdvantages(v)));
  members.forEach((m, g) => {
    for (const [id, a] of assignBack(m, advantageVectors[g] ?? [], options.rolloutLevel)) {
      result.advantageByRollout.set(id, a);
    }
  });
  return result;
}

/** Cuts a flat vector into pieces of the lengths of `shapes`. */
function splitLike(flat: readonly number[], shapes: readonly (readonly number[])[]): number[][] {
  let offset = 0;
  return shapes.map((s) => {
    const piece = flat.slice(offset, offset + s.length);
    offset += s.length;
    return piece;
  });
}

/**
 * Broadcasts a rollout's advantage onto one of its rows: the advantage on every mask-1 token, 0 elsewhere.
 * @param lossMask - the row's loss mask, [T]
 * @param advantage - the rollout's scalar advantage
 * @returns per-token advantages, [T]
 */
export function broadcastAdvantage(lossMask: readonly number[], advantage: number): number[] {
  return lossMask.map((m) => (m === 1 ? advantage : 0));
}
