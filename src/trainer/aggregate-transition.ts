/** @module Transition-level aggregation: one training row per model call. */
import { type AggregateResult, distinctVersions } from "./aggregate-result.js";
import { applyLengthLimits, type LengthLimits } from "./row-limits.js";
import type { TrainingRow } from "./training-row.js";
import type { ModelCall, RolloutTriplets } from "./triplets.js";

/** The row of a single call: its prompt, its response with mask 1, its logprobs (null where not recorded). */
function callRow(rollout: RolloutTriplets, call: ModelCall): TrainingRow {
  return {
    rolloutId: rollout.rolloutId,
    dataId: rollout.dataId,
    promptTokenIds: [...call.promptTokenIds],
    responseTokenIds: [...call.responseTokenIds],
    lossMask: call.responseTokenIds.map(() => 1),
    oldLogprobs: call.logprobs === null ? call.responseTokenIds.map(() => null) : [...call.logprobs],
    policyVersions: distinctVersions([call.policyVersion]),
    turns: [call.turn],
    ...(call.agentName !== undefined ? { agentName: call.agentName } : {}),
  };
}

/**
 * Makes one row per model call, then applies the length limits (see {@link applyLengthLimits}): a call with a
 * prompt over the limit is dropped, a long response truncated, an empty response skipped.
 * @param rollout - the rollout's usable calls, in order
 * @param limits - maximum prompt and response lengths (tokens)
 * @returns the rows in call order, the limit counts, and no mismatches
 */
export function aggregateTransitions(rollout: RolloutTriplets, limits: LengthLimits): AggregateResult {
  const rows = rollout.calls.map((call) => callRow(rollout, call));
  return { ...applyLengthLimits(rows, limits), mismatches: [] };
}
