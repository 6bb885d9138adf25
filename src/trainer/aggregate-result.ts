/** @module What both aggregation levels return (rows, length-limit counts, merge mismatches), and shared helpers. */
import type { LimitedRows } from "./row-limits.js";

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

/**
 * Lists the distinct values of `versions` in ascending order.
 * @param versions - policy versions, any order, repeats allowed
 * @returns distinct versions, ascending
 */
export function distinctVersions(versions: readonly number[]): number[] {
  return [...new Set(versions)].sort((a, b) => a - b);
}
