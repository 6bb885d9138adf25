/**
 * @module DAPO's dynamic sampling, the pure part: which finished groups carry a learning signal (their rollouts'
 * final rewards differ) and what a step's sampling cost, as step metrics. The loop launches more groups until
 * `train_batch_size` groups with a signal are in hand or `max_extra_rounds` rounds are spent.
 */
import { isZeroVariance } from "./advantage.js";
import { assembleBatch, type BatchOptions } from "./batch.js";
import type { FinishedGroup } from "./gateway-io.js";

/** What dynamic sampling did in one step. */
export interface SamplingCost {
  /** Rollouts sampled this step, every round together. */
  rolloutsSampled: number;
  /** Rollouts of the groups kept for training. */
  rolloutsKept: number;
  /** Groups dropped because every rollout got the same reward. */
  groupsDropped: number;
  /** Extra sampling rounds run (0 when the first round filled the batch). */
  extraRounds: number;
}

/**
 * True when a group's trained rollouts did not all get one final reward (up to the zero-variance tolerance), i.e.
 * GRPO gives it non-zero advantages. The rewards are read as the batch reads them (reward policy, fill value);
 * a group with fewer than two trained rollouts has no spread.
 * @param group - a finished group
 * @param options - the batch options of the run
 * @returns whether the group carries a learning signal
 * @see Yu et al., "DAPO", arXiv:2503.14476, §3.2, eq. 11 (0 < |{o_i : is_equivalent(a, o_i)}| < G)
 */
export function hasRewardSpread(group: FinishedGroup, options: BatchOptions): boolean {
  const { rewards } = assembleBatch(group.records, options);
  return !isZeroVariance(rewards.filter((r) => r.trained).map((r) => r.reward));
}

/**
 * Splits one sampling round's groups into those kept (reward spread) and those dropped, keeping at most `room`.
 * @param groups - the round's finished groups, launch order
 * @param options - the batch options of the run
 * @param room - groups the batch still lacks
 * @returns kept groups (launch order, at most `room`) and the number dropped for having no spread
 */
export function keepGroupsWithSpread(
  groups: readonly FinishedGroup[],
  options: BatchOptions,
  room: number,
): { kept: FinishedGroup[]; dropped: number } {
  const withSpread = groups.filter((g) => hasRewardSpread(g, options));
  return { kept: withSpread.slice(0, Math.max(0, room)), dropped: groups.length - withSpread.length };
}

/**
 * The step metrics of dynamic sampling (`sampling/*`), null values when it is off.
 * @param cost - what the step's sampling did; null when dynamic sampling is off
 * @returns `sampling/rollouts_sampled`, `sampling/rollouts_kept`, `sampling/groups_dropped`, `sampling/extra_rounds`
 */
export function samplingMetrics(cost: SamplingCost | null): Record<string, number | null> {
  return {
    "sampling/rollouts_sampled": cost?.rolloutsSampled ?? null,
    "sampling/rollouts_kept": cost?.rolloutsKept ?? null,
    "sampling/groups_dropped": cost?.groupsDropped ?? null,
    "sampling/extra_rounds": cost?.extraRounds ?? null,
  };
}
