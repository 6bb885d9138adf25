/**
 * @module Step metrics: the slash-namespaced record of one training step (Tinker's naming), built from the batch
 * counts, the engine's train metrics and the loop's timings, and appended as one JSON line to `runs/NAME/metrics.jsonl`.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { TrainMetrics } from "../engine/engine.js";
import { makeDirs } from "../fs/make-dirs.js";
import type { BatchCounts } from "./batch.js";
import { type SamplingCost, samplingMetrics } from "./dynamic-sampling.js";
import type { MismatchStats } from "./mismatch.js";
import type { LagStats } from "./staleness.js";

/** One step's metrics; keys are slash-namespaced, values numbers (null where not measured this step). */
export type StepMetrics = Record<string, number | null>;

/** What the loop measured around one step, besides the batch and the engine. */
export interface StepFacts {
  step: number;
  /** Policy version after the step's update. */
  policyVersion: number;
  /** Final reward of every rollout of the step; `trained` when it had rows in the batch. */
  rewards: readonly { reward: number; trained: boolean }[];
  /** Validation reward mean, when validation ran after this step; else null. */
  valRewardMean: number | null;
  /** Rollouts that failed (agent crash, timeout), and how many of them were dropped. */
  failedRollouts: number;
  failedDropped: number;
  /**
   * Async: pending groups dropped as unable to train within max_staleness (only after a resume with a tighter
   * budget; see staleness.ts), groups carried over to the next step.
   */
  staleGroupsDropped: number;
  carriedOver: number;
  /** Policy lag (versions) of the trained tokens and groups; 0 throughout in sync mode. */
  lag: LagStats;
  /** Seconds waiting for rollouts, draining the proxy, updating weights, and the whole step. */
  waitS: number;
  drainS: number;
  updateS: number;
  stepS: number;
  /** Mean of the engine's metrics over the step's PPO updates; null when no update ran (no trainable rows). */
  train: TrainMetrics | null;
  /** Async: TIS tokens whose weight hit the cap. */
  tisCappedTokens: number;
  /** Sampler–trainer mismatch, when π_old was recomputed this step; null otherwise. */
  mismatch: MismatchStats | null;
  /** Optimiser updates the engine skipped for a non-finite loss or gradient norm (see `nonfinite-guard.ts`). */
  nonFiniteSteps: number;
  /** Rows whose missing logprobs the engine recomputed (`missing_logprobs: recompute`, or async π_old). */
  recomputedLogprobRows: number;
  /** Rewards stored after the trainer had read their rollout (checked one step later); never trained. */
  lateRewardsMissed: number;
  /** What dynamic sampling did this step; null when it is off. */
  sampling: SamplingCost | null;
}

/** Population mean and standard deviation; nulls for an empty list. */
function meanStd(values: readonly number[]): { mean: number | null; std: number | null } {
  if (values.length === 0) return { mean: null, std: null };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length;
  return { mean, std: Math.sqrt(variance) };
}

/**
 * Builds one step's metric record. `reward/mean` and `reward/std` are over the rollouts that trained (had at least
 * one row); `reward/all_rollouts_mean` is over every rollout of the step, including those left out (no usable call,
 * every row dropped). Every exclusion has its own count: `no_calls`, `incomplete_calls`, `malformed_events`,
 * `deduped_calls`, `error_calls`, `logprobs/*`, `nonfinite_steps` (see docs/training-correctness.md).
 * @param facts - what the loop measured
 * @param counts - the batch counts from `assembleBatch`
 * @returns the record written to metrics.jsonl (times in seconds, entropy and KL in nats)
 */
export function stepMetrics(facts: StepFacts, counts: BatchCounts): StepMetrics {
  const reward = meanStd(facts.rewards.filter((r) => r.trained).map((r) => r.reward));
  const all = meanStd(facts.rewards.map((r) => r.reward));
  return {
    step: facts.step,
    policy_version: facts.policyVersion,
    "reward/mean": reward.mean,
    "reward/std": reward.std,
    "reward/all_rollouts_mean": all.mean,
    "val/reward_mean": facts.valRewardMean,
    rollouts: counts.rollouts,
    "rollouts/trained": counts.trainedRollouts,
    groups: counts.groups,
    rows: counts.rows,
    tokens: counts.tokens,
    truncated: counts.truncatedRows,
    dropped: counts.droppedRows,
    empty_rows: counts.emptyRows,
    mismatches: counts.mismatches,
    zero_adv_groups: counts.zeroAdvantageGroups,
    reward_filled: counts.rewardFilled,
    excluded_from_stats: counts.excludedFromStats,
    no_calls: counts.noCalls,
    error_calls: counts.errorCalls,
    incomplete_calls: counts.incompleteCalls,
    malformed_events: counts.malformedEvents,
    deduped_calls: counts.dedupedCalls,
    "logprobs/missing_calls": counts.missingLogprobCalls,
    "logprobs/missing_rows": counts.missingLogprobRows,
    "logprobs/dropped_rows": counts.missingLogprobRowsDropped,
    "logprobs/recomputed_rows": facts.recomputedLogprobRows,
    "logprobs/floored_tokens": counts.flooredLogprobTokens,
    nonfinite_steps: facts.nonFiniteSteps,
    "rollouts/failed": facts.failedRollouts,
    "rollouts/failed_dropped": facts.failedDropped,
    entropy: facts.train?.entropy ?? null,
    kl: facts.train?.approxKl ?? null,
    clip_fraction: facts.train?.clipFraction ?? null,
    loss: facts.train?.loss ?? null,
    grad_norm: facts.train?.gradNorm ?? null,
    "time/wait_s": facts.waitS,
    "time/drain_s": facts.drainS,
    "time/update_s": facts.updateS,
    "time/step_s": facts.stepS,
    "async/carried_over": facts.carriedOver,
    "async/stale_groups_dropped": facts.staleGroupsDropped,
    "async/tis_capped_tokens": facts.tisCappedTokens,
    "mismatch/kl": facts.mismatch?.kl ?? null,
    "mismatch/ratio_p05": facts.mismatch?.ratioP05 ?? null,
    "mismatch/ratio_p50": facts.mismatch?.ratioP50 ?? null,
    "mismatch/ratio_p95": facts.mismatch?.ratioP95 ?? null,
    "mismatch/masked_fraction": facts.mismatch?.maskedFraction ?? null,
    "mismatch/masked_rows": facts.mismatch?.maskedRows ?? null,
    "staleness/min": facts.lag.tokenMin,
    "staleness/mean": facts.lag.tokenMean,
    "staleness/max": facts.lag.tokenMax,
    "staleness/group_min": facts.lag.groupMin,
    "staleness/group_mean": facts.lag.groupMean,
    "staleness/group_max": facts.lag.groupMax,
    late_rewards_missed: facts.lateRewardsMissed,
    ...samplingMetrics(facts.sampling),
    ...rewardMetrics(counts),
  };
}

/**
 * The reward-policy and credit counts: reward events read, attached to calls, unmatched, set aside; the sum of
 * per-call rewards; and each intermediate rule's hits (`intermediate/NAME/hits`).
 */
function rewardMetrics(counts: BatchCounts): StepMetrics {
  const out: StepMetrics = {
    "rewards/events": counts.rewardEvents,
    "rewards/attached": counts.attachedRewards,
    "rewards/unmatched": counts.unmatchedRewards,
    "rewards/overridden": counts.overriddenRewards,
    "rewards/call_sum": counts.callRewardSum,
    "rewards/overlong_penalized": counts.overlongPenalized,
    "rewards/overlong_penalty_sum": counts.overlongPenaltySum,
  };
  for (const [name, hits] of Object.entries(counts.intermediateHits)) out[`intermediate/${name}/hits`] = hits;
  if (Object.keys(counts.intermediateHits).length > 0) {
    out["intermediate/unattributed"] = counts.intermediateUnattributed;
  }
  return out;
}

/**
 * Averages the engine's metrics over the applied PPO updates of one step (skipped non-finite ones left out).
 * @param all - one entry per `trainStep` call
 * @returns the mean of each field, or null when no update was applied
 */
export function meanTrainMetrics(all: readonly TrainMetrics[]): TrainMetrics | null {
  const updates = all.filter((m) => m.nonFiniteSkipped !== true);
  if (updates.length === 0) return null;
  const mean = (pick: (m: TrainMetrics) => number) => updates.reduce((a, m) => a + pick(m), 0) / updates.length;
  return {
    loss: mean((m) => m.loss),
    gradNorm: mean((m) => m.gradNorm),
    entropy: mean((m) => m.entropy),
    clipFraction: mean((m) => m.clipFraction),
    approxKl: mean((m) => m.approxKl),
    tokens: mean((m) => m.tokens),
  };
}

/**
 * Appends one record as a JSON line, creating the directory if needed.
 * @param path - `runs/NAME/metrics.jsonl`
 * @param record - one step's metrics
 */
export function appendMetrics(path: string, record: StepMetrics): void {
  makeDirs(dirname(path));
  appendFileSync(path, `${JSON.stringify(record)}\n`);
}

/**
 * Keeps only the records of steps up to `step` (a resumed run rewrites the steps after its checkpoint).
 * @param path - `runs/NAME/metrics.jsonl`; nothing happens when it does not exist
 * @param step - last step to keep
 */
export function truncateMetricsAfter(path: string, step: number): void {
  if (!existsSync(path)) return;
  const kept = readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "" && (JSON.parse(line) as { step: number }).step <= step);
  writeFileSync(path, kept.map((line) => `${line}\n`).join(""));
}
