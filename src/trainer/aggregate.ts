/**
 * @module What both aggregation levels return, and the one place that picks the aggregator for a configured level.
 */
import { aggregateTrajectories } from "./aggregate-trajectory.js";
import { aggregateTransitions } from "./aggregate-transition.js";
import type { LengthLimits, LimitedRows } from "./row-limits.js";
import type { RolloutTriplets } from "./triplets.js";

/** Why call k+1 of a rollout did not extend the row of call k (trajectory level). */
export interface MergeMismatch {
  rolloutId: string;
  /** Turn (usable-call index) of the call that started a new row. */
  turn: number;
  /** First position (token index) where the call's prompt departs from the row's tokens so far. */
  position: number;
  /**
   * `token_differs`: the ids at `position` differ (e.g. re-tokenised or rewritten history);
   * `prompt_shorter`: the prompt ends at `position`, inside the row's tokens (e.g. truncated history).
   */
  kind: "token_differs" | "prompt_shorter";
}

/** Rows made from one rollout, with the counts of the length limits and any merge mismatches. */
export interface AggregateResult extends LimitedRows {
  /** Always empty at transition level. */
  mismatches: MergeMismatch[];
}

/** Turns one rollout's calls into training rows. */
export type Aggregator = (rollout: RolloutTriplets, limits: LengthLimits) => AggregateResult;

/**
 * Picks the aggregator of a level.
 * @param level - `transition` (one row per call) or `trajectory` (merge calls that extend the row)
 * @returns {@link aggregateTransitions} or {@link aggregateTrajectories}
 */
export function aggregatorFor(level: "transition" | "trajectory"): Aggregator {
  return level === "trajectory" ? aggregateTrajectories : aggregateTransitions;
}

/**
 * Lists the distinct values of `versions` in ascending order.
 * @param versions - policy versions, any order, repeats allowed
 * @returns distinct versions, ascending
 */
export function distinctVersions(versions: readonly number[]): number[] {
  return [...new Set(versions)].sort((a, b) => a - b);
}
