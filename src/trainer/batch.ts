/**
 * @module One training step's data: the triplet events of many rollouts (grouped by `dataId`) → training rows with
 * advantages and loss weights → engine `TrainRow`s, plus the counts a step reports. Nothing here logs or measures time.
 */
import type { TrainRow } from "../engine/engine.js";
import { aggregatorFor } from "./aggregate.js";
import type { AggregateResult, MergeMismatch } from "./aggregate-result.js";
import type { TrainerConfig } from "./config.js";
import { type AdvantageOptions, computeBatchAdvantages } from "./group-advantage.js";
import { perRolloutMeanWeights, withTruncatedIs } from "./loss-weights.js";
import { flooredLogprobTokens, lacksLogprobs } from "./missing-logprobs.js";
import type { LengthLimits } from "./row-limits.js";
import { type ScoredRow, toEngineRow, trainableTokens } from "./training-row.js";
import { extractTriplets, type RolloutTriplets, type TripletEventFields } from "./triplets.js";

/** One finished rollout as read from the gateway. */
export interface RolloutRecord {
  rolloutId: string;
  /** Group id: the rollouts of one input share it. */
  dataId: string;
  /** The rollout's events in triplet format (`?format=triplet`). */
  events: readonly TripletEventFields[];
}

/** Everything the batch transform needs from the trainer config. */
export interface BatchOptions {
  level: "transition" | "trajectory";
  limits: LengthLimits;
  advantage: AdvantageOptions;
  aggregation: "token-mean" | "per-rollout-mean";
  rewardFillnaValue: number;
  /**
   * Rows lacking a recorded logprob on some trained token: `recompute` keeps them (the loop fills the gaps with the
   * engine, see `missing-logprobs.ts`); `drop` leaves them out before the advantages are computed.
   */
  missingLogprobs: "recompute" | "drop";
}

/** What one step's data contained; the loop turns these into metrics. */
export interface BatchCounts {
  rollouts: number;
  /** Groups with at least one rollout that has rows. */
  groups: number;
  rows: number;
  /** Mask-1 tokens over all rows (tokens). */
  tokens: number;
  truncatedRows: number;
  droppedRows: number;
  /** Rows skipped for having 0 trainable tokens. */
  emptyRows: number;
  mismatches: number;
  zeroAdvantageGroups: number;
  /** Rollouts whose reward was the fill value. */
  rewardFilled: number;
  /** Rollouts with a reward but no rows, left out of the advantage statistics. */
  excludedFromStats: number;
  /** Rollouts without a single usable model call (a subset of `excludedFromStats`). */
  noCalls: number;
  /** Rollouts with at least one row in the batch (the ones that train). */
  trainedRollouts: number;
  errorCalls: number;
  incompleteCalls: number;
  malformedEvents: number;
  /** Earlier events of retried calls the triplet view left out. */
  dedupedCalls: number;
  /** Calls kept without logprobs (missing, non-finite or misaligned at capture, or never recorded). */
  missingLogprobCalls: number;
  /** Rows lacking a recorded logprob on some trained token (before `missingLogprobs` handling). */
  missingLogprobRows: number;
  /** Of those, rows left out (`missingLogprobs: drop`). */
  missingLogprobRowsDropped: number;
  /** Trained tokens whose recorded logprob is below the engine's floor (floored by the engine). */
  flooredLogprobTokens: number;
  /** Oldest policy version that produced a trained token (staleness = current − this); null without rows. */
  oldestPolicyVersion: number | null;
}

/** One step's training data. */
export interface StepBatch {
  /** Scored rows, rollout by rollout in input order. */
  rows: ScoredRow[];
  /** `rows` converted for the engine, same order. */
  engineRows: TrainRow[];
  /** Every rollout's final reward (filled where missing), input order; `trained` when it has rows in the batch. */
  rewards: { rolloutId: string; dataId: string; reward: number; trained: boolean }[];
  mismatches: MergeMismatch[];
  counts: BatchCounts;
  /** Rollouts with rows lacking recorded logprobs (recomputed or dropped), input order, each once. */
  missingLogprobRollouts: string[];
}

/**
 * Picks the batch options out of a trainer config.
 * @param config - a parsed trainer config
 * @returns the options of {@link assembleBatch}
 */
export function batchOptionsFromConfig(config: TrainerConfig): BatchOptions {
  return {
    level: config.aggregator.level,
    limits: {
      maxPromptLength: config.aggregator.max_prompt_length,
      maxResponseLength: config.aggregator.max_response_length,
    },
    advantage: {
      estimator: config.advantage.estimator,
      normByStd: config.advantage.norm_by_std,
      rolloutLevel: config.advantage.rollout_level,
      reinforceBaseline: config.advantage.reinforce_baseline,
    },
    aggregation: config.loss.aggregation,
    rewardFillnaValue: config.reward_fillna_value,
    missingLogprobs: config.missing_logprobs,
  };
}

/**
 * Turns one rollout's events into its training rows (what `arclight inspect` prints).
 * @param record - the rollout's id, group and triplet events
 * @param options - aggregation level, limits, reward fill value, and `agents` (keep only these agents' calls; all when
 *   absent)
 * @returns the extracted calls and reward, and the rows with their limit counts and mismatches
 */
export function buildRolloutRows(
  record: RolloutRecord,
  options: Pick<BatchOptions, "level" | "limits" | "rewardFillnaValue"> & { agents?: ReadonlySet<string> },
): { triplets: RolloutTriplets; aggregate: AggregateResult } {
  const triplets = extractTriplets(
    record.rolloutId,
    record.dataId,
    record.events,
    options.rewardFillnaValue,
    options.agents,
  );
  return { triplets, aggregate: aggregatorFor(options.level)(triplets, options.limits) };
}

/** Adds one rollout's extraction and aggregation counts to the batch counts. */
function addRolloutCounts(counts: BatchCounts, triplets: RolloutTriplets, aggregate: AggregateResult): void {
  counts.truncatedRows += aggregate.truncatedRows;
  counts.droppedRows += aggregate.droppedRows;
  counts.emptyRows += aggregate.emptyRows;
  counts.mismatches += aggregate.mismatches.length;
  counts.rewardFilled += triplets.rewardFilled ? 1 : 0;
  counts.errorCalls += triplets.errorCalls;
  counts.incompleteCalls += triplets.incompleteCalls;
  counts.malformedEvents += triplets.malformedEvents;
  counts.dedupedCalls += triplets.dedupedCalls;
  counts.missingLogprobCalls += triplets.missingLogprobCalls;
  counts.noCalls += triplets.calls.length === 0 ? 1 : 0;
}

function emptyCounts(rollouts: number): BatchCounts {
  return {
    rollouts,
    groups: 0,
    rows: 0,
    tokens: 0,
    truncatedRows: 0,
    droppedRows: 0,
    emptyRows: 0,
    mismatches: 0,
    zeroAdvantageGroups: 0,
    rewardFilled: 0,
    excludedFromStats: 0,
    noCalls: 0,
    trainedRollouts: 0,
    errorCalls: 0,
    incompleteCalls: 0,
    malformedEvents: 0,
    dedupedCalls: 0,
    missingLogprobCalls: 0,
    missingLogprobRows: 0,
    missingLogprobRowsDropped: 0,
    flooredLogprobTokens: 0,
    oldestPolicyVersion: null,
  };
}

/**
 * Counts the rows lacking recorded logprobs and, for `missingLogprobs: drop`, removes them from each rollout.
 * @returns the rollout ids concerned, input order, each once
 */
function handleMissingLogprobs(
  built: { triplets: RolloutTriplets; aggregate: AggregateResult }[],
  mode: BatchOptions["missingLogprobs"],
  counts: BatchCounts,
): string[] {
  const rolloutIds: string[] = [];
  for (const entry of built) {
    const missing = entry.aggregate.rows.filter(lacksLogprobs).length;
    if (missing === 0) continue;
    rolloutIds.push(entry.triplets.rolloutId);
    counts.missingLogprobRows += missing;
    if (mode !== "drop") continue;
    counts.missingLogprobRowsDropped += missing;
    entry.aggregate = { ...entry.aggregate, rows: entry.aggregate.rows.filter((row) => !lacksLogprobs(row)) };
  }
  return rolloutIds;
}

/**
 * Assembles one step: (1) each rollout's events → calls + reward → rows (aggregation level, length limits);
 * (1b) rows lacking recorded logprobs counted and, for `missingLogprobs: drop`, left out;
 * (2) one advantage per rollout from its group (rollouts without rows excluded); (3) each row scored with its
 * rollout's advantage and, for `per-rollout-mean`, weighted 1 / (its rollout's trainable tokens); (4) engine rows.
 * Rows of zero-variance groups stay in the batch with advantage 0: they add nothing to the policy-gradient term but
 * still count in the loss normaliser, as in GRPO.
 * @param rollouts - finished rollouts, any number of groups
 * @param options - see {@link batchOptionsFromConfig}
 * @returns rows, engine rows, rewards, mismatches and counts
 */
export function assembleBatch(rollouts: readonly RolloutRecord[], options: BatchOptions): StepBatch {
  const counts = emptyCounts(rollouts.length);
  const built = rollouts.map((record) => buildRolloutRows(record, options));
  for (const { triplets, aggregate } of built) addRolloutCounts(counts, triplets, aggregate);
  const missingLogprobRollouts = handleMissingLogprobs(built, options.missingLogprobs, counts);
  const advantages = computeBatchAdvantages(
    built.map(({ triplets, aggregate }) => ({
      rolloutId: triplets.rolloutId,
      dataId: triplets.dataId,
      reward: triplets.reward,
      rowCount: aggregate.rows.length,
    })),
    options.advantage,
  );
  counts.groups = advantages.groups;
  counts.zeroAdvantageGroups = advantages.zeroVarianceGroups;
  counts.excludedFromStats = advantages.excludedFromStats;
  const plainRows = built.flatMap(({ aggregate }) => aggregate.rows);
  const weights = options.aggregation === "per-rollout-mean" ? perRolloutMeanWeights(plainRows) : null;
  const rows: ScoredRow[] = plainRows.map((row, i) => ({
    ...row,
    advantage: advantages.advantageByRollout.get(row.rolloutId) ?? 0,
    ...(weights === null ? {} : { weight: weights[i] }),
  }));
  counts.rows = rows.length;
  counts.tokens = rows.reduce((sum, row) => sum + trainableTokens(row), 0);
  counts.flooredLogprobTokens = flooredLogprobTokens(rows);
  counts.trainedRollouts = built.filter(({ aggregate }) => aggregate.rows.length > 0).length;
  const versions = rows.flatMap((row) => row.policyVersions);
  counts.oldestPolicyVersion = versions.length === 0 ? null : Math.min(...new Set(versions));
  return {
    rows,
    engineRows: rows.map(toEngineRow),
    rewards: built.map(({ triplets: t, aggregate }) => ({
      rolloutId: t.rolloutId,
      dataId: t.dataId,
      reward: t.reward,
      trained: aggregate.rows.length > 0,
    })),
    mismatches: built.flatMap(({ aggregate }) => aggregate.mismatches),
    counts,
    missingLogprobRollouts,
  };
}

/** A step batch switched to truncated importance sampling, with what the weights saw. */
export interface TisBatch extends StepBatch {
  /** Mask-1 tokens without a recorded sampling logprob (weight 1). */
  tisUnknownTokens: number;
  /** Mask-1 tokens whose π_old / μ ratio exceeded the cap. */
  tisCappedTokens: number;
}

/**
 * Switches a batch to decoupled PPO with truncated importance sampling (async mode): each row's old logprobs become
 * the trainer's π_old logprobs and its tokens carry min(π_old / μ, cap) (see `withTruncatedIs` in loss-weights.ts).
 * @param batch - a batch from {@link assembleBatch}, old logprobs still the sampling-time ones
 * @param logprobs_D_T - `engine.logprobs(batch.engineRows.map((r) => r.tokenIds))` under the weights at step start,
 *   ragged [rows, T] aligned with each engine row's `tokenIds` (nats)
 * @param cap - TIS cap C ≥ 1 (`loss.tis_cap`)
 * @returns the batch with new rows and engine rows, and the TIS counts
 * @throws {RangeError} when the logprobs do not have one row of the right length per batch row, or `cap` < 1
 */
export function withTruncatedIsBatch(
  batch: StepBatch,
  logprobs_D_T: readonly (readonly number[])[],
  cap: number,
): TisBatch {
  if (logprobs_D_T.length !== batch.rows.length) {
    throw new RangeError(`TIS: got logprobs for ${logprobs_D_T.length} rows, the batch has ${batch.rows.length}`);
  }
  let tisUnknownTokens = 0;
  let tisCappedTokens = 0;
  const rows = batch.rows.map((row, i) => {
    const full = logprobs_D_T[i] ?? [];
    const promptLen = row.promptTokenIds.length;
    if (full.length !== promptLen + row.responseTokenIds.length) {
      throw new RangeError(
        `TIS: row ${i} has ${promptLen + row.responseTokenIds.length} tokens, got ${full.length} logprobs`,
      );
    }
    const out = withTruncatedIs(row, full.slice(promptLen), cap);
    tisUnknownTokens += out.unknownTokens;
    tisCappedTokens += out.cappedTokens;
    return out.row;
  });
  return { ...batch, rows, engineRows: rows.map(toEngineRow), tisUnknownTokens, tisCappedTokens };
}
