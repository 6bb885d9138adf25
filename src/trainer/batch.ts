/**
 * @module One training step's data: the triplet events of many rollouts (grouped by `dataId`) → training rows with
 * advantages and loss weights → engine `TrainRow`s, plus the counts a step reports. Nothing here logs or measures time.
 */
import type { TrainRow } from "../engine/engine.js";
import { type AgentFilter, agentFilter } from "../protocol/agent-match.js";
import { aggregatorFor } from "./aggregate.js";
import type { AggregateResult, MergeMismatch } from "./aggregate-result.js";
import { type Baseline, computeBatchBaselines } from "./baselines.js";
import type { IntermediateRule, TrainerConfig } from "./config.js";
import { type CreditMode, callReturns, rolloutValue, scoreRow } from "./credit.js";
import { type AdvantageOptions, computeBatchAdvantages } from "./group-advantage.js";
import { intermediateRewarder, ruleName } from "./intermediate-rewards.js";
import { type LossAggregationName, perRolloutMeanWeights, withTruncatedIs } from "./loss-weights.js";
import { flooredLogprobTokens, lacksLogprobs } from "./missing-logprobs.js";
import { type OverlongShaping, overlongPenalty } from "./overlong.js";
import type { RewardPolicy } from "./reward-policy.js";
import type { LengthLimits } from "./row-limits.js";
import { type ScoredRow, type TrainingRow, toEngineRow, trainableTokens } from "./training-row.js";
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
  aggregation: LossAggregationName;
  rewardFillnaValue: number;
  /**
   * Rows lacking a recorded logprob on some trained token: `recompute` keeps them (the loop fills the gaps with the
   * engine, see `missing-logprobs.ts`); `drop` leaves them out before the advantages are computed.
   */
  missingLogprobs: "recompute" | "drop";
  /** How several reward events of a rollout combine (reward-policy.ts); default `last`. */
  rewardPolicy?: RewardPolicy;
  /** Credit assignment over a rollout's calls (credit.ts); default broadcast. */
  credit?: { mode: CreditMode; gamma: number };
  /** Automatic intermediate reward rules (intermediate-rewards.ts); default none. */
  intermediateRewards?: readonly IntermediateRule[];
  /** Only these agents' calls become rows; every call when absent. */
  agents?: AgentFilter;
  /** DAPO's overlong reward shaping of the final reward (overlong.ts); none when absent. */
  overlong?: OverlongShaping;
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
  /** Valid reward events read. */
  rewardEvents: number;
  /** Reward events attached to a call (`reward_policy: per_call`). */
  attachedRewards: number;
  /** Reward events naming a call that is not a usable call of the rollout (not used). */
  unmatchedRewards: number;
  /** Reward events set aside by the policy (earlier final rewards). */
  overriddenRewards: number;
  /** Hits of each intermediate reward rule, by rule name. */
  intermediateHits: Record<string, number>;
  /** Tool-span hits that found no call to reward. */
  intermediateUnattributed: number;
  /** Σ of the per-call rewards (events + rules) over the batch's rollouts. */
  callRewardSum: number;
  /** Rollouts whose final reward got an overlong penalty, and the penalties' sum (overlong_shaping). */
  overlongPenalized: number;
  overlongPenaltySum: number;
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
    // Dr. GRPO's advantage is GRPO's without the std division (arXiv:2503.20783, §3.2).
    advantage: {
      estimator: config.advantage.estimator === "dr_grpo" ? "grpo" : config.advantage.estimator,
      normByStd: config.advantage.estimator === "dr_grpo" ? false : config.advantage.norm_by_std,
      rolloutLevel: config.advantage.rollout_level,
      reinforceBaseline: config.advantage.reinforce_baseline,
    },
    aggregation: config.loss.aggregation,
    rewardFillnaValue: config.reward_fillna_value,
    missingLogprobs: config.missing_logprobs,
    rewardPolicy: config.reward_policy,
    credit: { mode: config.credit.mode, gamma: config.credit.gamma },
    intermediateRewards: config.intermediate_rewards,
    ...trainedAgents(config.agents),
    ...overlongOf(config.overlong_shaping),
  };
}

/** The overlong shaping option of a config: present only when `overlong_shaping.max_length` is set. */
function overlongOf(shaping: TrainerConfig["overlong_shaping"]): { overlong?: OverlongShaping } {
  if (shaping.max_length === null) return {};
  return { overlong: { maxLength: shaping.max_length, buffer: shaping.buffer, factor: shaping.factor } };
}

/**
 * The row filter of `trainer.agents`: with `train` entries, calls of agents it names and `frozen` does not; with only
 * `frozen`, every call except those of frozen agents (calls naming no agent included).
 * @param agents - the config section
 * @returns `{agents}` with the filter, or nothing when both lists are empty
 */
export function trainedAgents(agents: TrainerConfig["agents"]): { agents?: AgentFilter } {
  if (agents.train.length === 0 && agents.frozen.length === 0) return {};
  const frozen = agentFilter(agents.frozen);
  const train = agents.train.length === 0 ? () => true : agentFilter(agents.train);
  return { agents: (name) => train(name) && !frozen(name) };
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
  options: Pick<BatchOptions, "level" | "limits" | "rewardFillnaValue" | "rewardPolicy" | "agents">,
): { triplets: RolloutTriplets; aggregate: AggregateResult } {
  const triplets = extractTriplets(record.rolloutId, record.dataId, record.events, options.rewardFillnaValue, {
    ...(options.agents ? { agents: options.agents } : {}),
    ...(options.rewardPolicy ? { rewardPolicy: options.rewardPolicy } : {}),
  });
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
  counts.rewardEvents += triplets.rewardEvents;
  counts.attachedRewards += triplets.attachedRewards;
  counts.unmatchedRewards += triplets.unmatchedRewards;
  counts.overriddenRewards += triplets.overriddenRewards;
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
    rewardEvents: 0,
    attachedRewards: 0,
    unmatchedRewards: 0,
    overriddenRewards: 0,
    intermediateHits: {},
    intermediateUnattributed: 0,
    callRewardSum: 0,
    overlongPenalized: 0,
    overlongPenaltySum: 0,
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
 * (2) per-call rewards (events naming calls, intermediate rules) and the credit mode give each call a return G_t
 * (credit.ts); (3) one advantage per rollout from its group (rollouts without rows excluded; broadcast), or one
 * baseline per rollout and A_t = (G_t − b) / s per call (per_call, discounted); (4) each row scored and, for
 * `per-rollout-mean`, weighted 1 / (its rollout's trainable tokens); (5) engine rows.
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
  const credited = creditRollouts(built, options, counts);
  const samples = built.map(({ triplets, aggregate }, i) => ({
    rolloutId: triplets.rolloutId,
    dataId: triplets.dataId,
    reward: credited[i]?.value ?? triplets.reward,
    rowCount: aggregate.rows.length,
  }));
  const advantages = computeBatchAdvantages(samples, options.advantage);
  counts.groups = advantages.groups;
  counts.zeroAdvantageGroups = advantages.zeroVarianceGroups;
  counts.excludedFromStats = advantages.excludedFromStats;
  const plainRows = built.flatMap(({ aggregate }) => aggregate.rows);
  const weights = options.aggregation === "per-rollout-mean" ? perRolloutMeanWeights(plainRows) : null;
  const scored = scoreRows(built, credited, options, () =>
    broadcasts(options) ? advantages.advantageByRollout : computeBatchBaselines(samples, options.advantage),
  );
  const rows: ScoredRow[] = scored.map((row, i) => (weights === null ? row : { ...row, weight: weights[i] }));
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

/** One rollout's returns under the credit mode and its value for the group statistics. */
interface CreditedRollout {
  /** G_t, [calls]. */
  returns: number[];
  /** mean_t G_t (R + Σ r under broadcast). */
  value: number;
}

/** True when every call of a rollout gets the rollout's advantage (credit broadcast, today's behaviour). */
function broadcasts(options: BatchOptions): boolean {
  return (options.credit?.mode ?? "broadcast") === "broadcast";
}

/**
 * Per-call rewards (reward events naming calls + intermediate rules) → each rollout's returns and statistic value;
 * the rule hits and reward sums are added to `counts`.
 */
function creditRollouts(
  built: readonly { triplets: RolloutTriplets; aggregate: AggregateResult }[],
  options: BatchOptions,
  counts: BatchCounts,
): CreditedRollout[] {
  const rules = options.intermediateRewards ?? [];
  const rewarder = intermediateRewarder(rules);
  for (const rule of rules) counts.intermediateHits[ruleName(rule)] = 0;
  const { mode, gamma } = options.credit ?? { mode: "broadcast", gamma: 1 };
  return built.map(({ triplets, aggregate }) => {
    const reward = triplets.reward + shapedPenalty(aggregate.rows, options, counts);
    const intermediate = rewarder(triplets.calls, triplets.spans);
    for (const [name, hits] of Object.entries(intermediate.hits)) {
      counts.intermediateHits[name] = (counts.intermediateHits[name] ?? 0) + hits;
    }
    counts.intermediateUnattributed += intermediate.unattributed;
    const callRewards = triplets.callRewards.map((r, t) => r + (intermediate.callRewards[t] ?? 0));
    counts.callRewardSum += callRewards.reduce((sum, r) => sum + r, 0);
    const returns = callReturns(reward, callRewards, mode, gamma);
    return { returns, value: rolloutValue(reward, returns) };
  });
}

/** The overlong penalty of one rollout (its rows' trained tokens as its length), counted; 0 without shaping. */
function shapedPenalty(rows: readonly TrainingRow[], options: BatchOptions, counts: BatchCounts): number {
  if (options.overlong === undefined || rows.length === 0) return 0;
  const penalty = overlongPenalty(
    rows.reduce((sum, row) => sum + trainableTokens(row), 0),
    options.overlong,
  );
  if (penalty < 0) counts.overlongPenalized += 1;
  counts.overlongPenaltySum += penalty;
  return penalty;
}

/**
 * Scores rows: under broadcast every row gets its rollout's advantage, exactly as group-advantage.ts computes it;
 * otherwise each call's (G_t − b) / s with its rollout's group baseline (baselines.ts, credit.ts).
 * @param statistics - the rollout advantages (broadcast) or baselines (other modes), computed on demand
 */
function scoreRows(
  built: readonly { aggregate: AggregateResult }[],
  credited: readonly CreditedRollout[],
  options: BatchOptions,
  statistics: () => Map<string, number> | Map<string, Baseline>,
): ScoredRow[] {
  const byRollout = statistics();
  return built.flatMap(({ aggregate }, i) =>
    aggregate.rows.map((row) => {
      const entry = byRollout.get(row.rolloutId);
      if (broadcasts(options)) return { ...row, advantage: typeof entry === "number" ? entry : 0 };
      const baseline = typeof entry === "object" ? entry : { baseline: 0, scale: 1 };
      return scoreRow(row, credited[i]?.returns ?? [], baseline);
    }),
  );
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
