/**
 * @module The one place that picks the aggregator for a configured level (what they return: aggregate-result.ts).
 */

import type { AggregateResult } from "./aggregate-result.js";
import { aggregateTrajectories } from "./aggregate-trajectory.js";
import { aggregateTransitions } from "./aggregate-transition.js";
import type { LengthLimits } from "./row-limits.js";
import type { RolloutTriplets } from "./triplets.js";

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
