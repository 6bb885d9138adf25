/**
 * @module The reference training loop, meant to be read top to bottom (after Tinker's `rl_loop`): launch groups of
 * rollouts, wait for them (sync: all; async: the first `train_batch_size` complete groups, never a split group), read
 * their triplet events, pause and drain the proxy, assemble the batch, update the policy, publish the weights and
 * re-register the endpoints with the new version, resume, validate, log metrics, checkpoint.
 */

import { join } from "node:path";
import { type Logger, pino } from "pino";
import type { Engine, LossConfig, OptimizerConfig, TrainMetrics, TrainRow } from "../engine/engine.js";
import type { GatewayClient } from "../gateway/client.js";
import { type GroupJudge, judgeGroup } from "../judge/apply.js";
import { assembleBatch, batchOptionsFromConfig, type StepBatch } from "./batch.js";
import {
  checkCheckpointPolicies,
  engineCheckpointDir,
  loadLatestCheckpoint,
  saveTrainerCheckpoint,
  type TrainerState,
} from "./checkpoint.js";
import { OBJECTIVE_CLIPS, type TrainerConfig } from "./config.js";
import { DataCursor, type DataItem } from "./data-order.js";
import { keepGroupsWithSpread, type SamplingCost } from "./dynamic-sampling.js";
import { AllRolloutsFailed } from "./failure-report.js";
import {
  type FinishedGroup,
  launchGroup,
  type PauseSettings,
  proxyRegistrationOf,
  readFinishedGroup,
  registerEndpoints,
  withPausedProxy,
} from "./gateway-io.js";
import { LateRewardWatch } from "./late-rewards.js";
import { engineAggregation, tokenSumNormalizer } from "./loss-weights.js";
import { appendMetrics, meanTrainMetrics, type StepMetrics, stepMetrics, truncateMetricsAfter } from "./metrics.js";
import { miniBatchIndices } from "./mini-batches.js";
import { type MismatchStats, mismatchSettingsOf, withMismatchCorrection } from "./mismatch.js";
import { lacksLogprobs, withRecomputedLogprobs } from "./missing-logprobs.js";
import {
  type AgentTrainMetrics,
  foreignCalls,
  perPolicyMetrics,
  policyLogprobs,
  sharesOf,
  type TrainedPolicy,
} from "./policies.js";
import { type GroupPlan, GroupTracker, planGroup, trainGroupId } from "./rollout-groups.js";
import type { PolicyServing } from "./serving.js";
import { chooseWithinBudget, inFlightLimit, lagStats, pastDeadline, type StalenessBudget } from "./staleness.js";
import { toEngineRow, trainableTokens } from "./training-row.js";
import { runValidation, type ValidationRow } from "./validation.js";

/** Receives each step's metrics (console table, progress bar); see console-report.ts. */
export interface StepReporter {
  onStep(metrics: StepMetrics, totalSteps: number): void;
  /** A validation pass after `step` finished (before that step's {@link onStep}). */
  onValidation?(step: number, rows: readonly ValidationRow[]): void;
  /** The trainer checkpoint of `step` was saved in `dir`. */
  onCheckpoint?(step: number, dir: string): void;
  close(): void;
}

/** Everything the loop drives. */
export interface TrainLoopOptions {
  config: Readonly<TrainerConfig>;
  client: GatewayClient;
  /** The engine being trained (and, collocated, the one serving); with `policies`, the base they start from. */
  engine: Engine;
  /**
   * One policy per agent (`agents.policy: per_agent`), each trained on its agent's rows and served under its own
   * model name; absent: `engine` is the one policy, served as `modelName`.
   */
  policies?: readonly TrainedPolicy[];
  /** Model names the servers answer with the base weights, never trained: registered once, at version 0. */
  baseModels?: readonly string[];
  serving: PolicyServing;
  /** Frozen reference policy for the KL term; required when `loss.kl_coef` > 0. */
  referenceEngine?: Engine;
  trainData: readonly DataItem[];
  valData?: readonly DataItem[] | null;
  /** `runs/NAME`: metrics.jsonl and checkpoints go here. */
  runDir: string;
  /** Continue from the run's latest checkpoint (same step, same data order). */
  resume?: boolean;
  /** Model name the gateway proxy looks endpoints up by; default "policy". */
  modelName?: string;
  logger?: Logger;
  reporter?: StepReporter;
  /** Interval between gateway polls while waiting or draining (ms); default 100. */
  pollIntervalMs?: number;
  /** Return after this many steps of this call (a test's stand-in for a crash); default: run to the end. */
  stopAfterSteps?: number;
  /**
   * Stops the run: checked before each step and at every poll while waiting for rollouts or validation, it makes
   * `runTraining` reject with the signal's reason (rollouts already launched are left to the gateway and controller).
   */
  signal?: AbortSignal;
  /** An LLM judge applied to each group as it completes (the config's `judge` section, its key read); none: off. */
  judge?: GroupJudge;
}

/** What a call of {@link runTraining} did. */
export interface TrainSummary {
  /** Steps completed in total (a resumed run counts the earlier ones too). */
  steps: number;
  policyVersion: number;
  /** Metrics of the steps run by this call. */
  metrics: StepMetrics[];
}

/**
 * Number of steps of a run: `total_steps`, or enough steps for `epochs` passes over the train data.
 * @param config - trainer config
 * @param trainSize - number of train inputs
 */
export function totalStepsOf(config: TrainerConfig, trainSize: number): number {
  return config.total_steps ?? Math.max(1, Math.ceil((config.epochs * trainSize) / config.train_batch_size));
}

/** The engine loss and optimiser settings from the trainer config. */
function lossAndOptimizer(config: TrainerConfig): { loss: LossConfig; optimizer: OptimizerConfig } {
  return {
    loss: {
      kind: "ppo",
      objective: config.loss.objective,
      clipLow: config.loss.clip_low ?? OBJECTIVE_CLIPS[config.loss.objective].low,
      clipHigh: config.loss.clip_high ?? OBJECTIVE_CLIPS[config.loss.objective].high,
      ...(config.loss.dual_clip === null ? {} : { dualClip: config.loss.dual_clip }),
      klCoef: config.loss.kl_coef,
      aggregation: engineAggregation(config.loss.aggregation),
    },
    optimizer: {
      learningRate: config.optimizer.learning_rate,
      weightDecay: config.optimizer.weight_decay,
      maxGradNorm: config.optimizer.max_grad_norm,
      microBatchSize: config.optimizer.micro_batch_size,
    },
  };
}

/**
 * Fails when the aggregator's lengths do not fit the engine's context; the CLI calls it before opening trackers.
 * @throws {RangeError} naming both lengths and the context
 */
export function checkContextFits(config: Readonly<TrainerConfig>, contextLength: number): void {
  const longest = config.aggregator.max_prompt_length + config.aggregator.max_response_length;
  if (longest > contextLength) {
    throw new RangeError(
      `aggregator.max_prompt_length + aggregator.max_response_length = ${longest} tokens exceed the engine's ` +
        `context of ${contextLength} tokens: set them in the config so that they sum to at most ` +
        `${contextLength} (e.g. aggregator: {max_prompt_length: ${Math.floor(contextLength / 2)}, ` +
        `max_response_length: ${Math.floor(contextLength / 2)}})`,
    );
  }
}

/** Fails early on settings the engine cannot honour. */
function checkSetup(options: TrainLoopOptions): void {
  const { config, engine } = options;
  checkContextFits(config, engine.contextLength);
  if (config.loss.kl_coef > 0 && options.referenceEngine === undefined) {
    throw new RangeError("loss.kl_coef > 0 needs a reference engine (the initial weights)");
  }
}

/** The loop's settings and running state, shared by its steps. */
interface LoopRun {
  options: TrainLoopOptions;
  config: Readonly<TrainerConfig>;
  log: Logger;
  pollMs: number;
  modelName: string;
  /** What this run trains: the shared policy, or one per agent. */
  policies: readonly TrainedPolicy[];
  metricsPath: string;
  totalSteps: number;
  /** Last step this call runs (`stopAfterSteps` may end it early). */
  stopAt: number;
  seed: number;
  cursor: DataCursor;
  tracker: GroupTracker;
  lateWatch: LateRewardWatch;
  /** Launched groups not trained yet, launch order. */
  pending: GroupPlan[];
  policyVersion: number;
  step: number;
  /** Metrics of the steps this call ran. */
  ran: StepMetrics[];
  /** Whether any rollout of this run has finished without failing (a resumed run counts as having had one). */
  anySucceeded: boolean;
}

/**
 * The groups a step trains on, how many pending groups were dropped as past saving (only after a resume with a
 * tighter budget), and dynamic sampling's cost.
 */
interface ChosenGroups {
  chosen: FinishedGroup[];
  staleGroupsDropped: number;
  /** Null when dynamic sampling is off. */
  sampling?: SamplingCost | null;
}

/** What a policy update did (steps 6–7). */
interface PolicyUpdate {
  batch: StepBatch;
  updates: AgentTrainMetrics[];
  drainS: number;
  updateS: number;
  tisCappedTokens: number;
  recomputedRows: number;
  /** Mismatch metrics when π_old was recomputed (async, or `mismatch.recompute_old_logprobs`); else null. */
  mismatch: MismatchStats | null;
  /** Per agent with its own policy: its calls that another model answered (see `foreignCalls`). */
  foreign: Map<string, { calls: number; models: string[] }>;
}

/**
 * Runs (or resumes) training to the configured number of steps, one {@link runStep} after another. The reporter is
 * closed on every way out (done, error, abort).
 * @param options - config, gateway client, engine, serving, data, run directory
 * @returns steps done, final policy version, this call's metrics
 * @throws {RangeError} for settings the engine cannot honour (see `checkSetup`)
 * @throws whatever the gateway client or engine throws outside a single rollout's data (network gone, engine failure)
 */
export async function runTraining(options: TrainLoopOptions): Promise<TrainSummary> {
  try {
    checkSetup(options);
    const run = await startRun(options);
    while (run.step < run.stopAt) await runStep(run);
    await reportLateRewards(run.lateWatch, options.client, run.log);
    return { steps: run.step, policyVersion: run.policyVersion, metrics: run.ran };
  } finally {
    options.reporter?.close();
  }
}

/**
 * Steps 1–2: the state (fresh, or the latest checkpoint: engine weights + optimiser, step, data cursor, pending
 * groups), then serve the policy: register the endpoints with the current version and re-create the groups a
 * checkpoint left pending (same ids: rollouts the gateway still has are reused as they are).
 */
async function startRun(options: TrainLoopOptions): Promise<LoopRun> {
  const { config, client, engine } = options;
  const log = (options.logger ?? pino({ level: "silent" })).child({ component: "trainer" });
  const metricsPath = join(options.runDir, "metrics.jsonl");
  let state: TrainerState = { step: 0, policyVersion: 0, data: { epoch: 0, index: 0 }, seed: config.seed, pending: [] };
  const checkpoint = options.resume ? loadLatestCheckpoint(options.runDir) : null;
  const modelName = options.modelName ?? "policy";
  const policies = options.policies ?? [{ agent: null, modelName, engine }];
  if (checkpoint !== null) {
    state = checkpoint.state;
    checkCheckpointPolicies(
      checkpoint.dir,
      policies.map((policy) => policy.agent),
    );
    for (const policy of policies)
      await policy.engine.loadCheckpoint(engineCheckpointDir(checkpoint.dir, policy.agent));
    truncateMetricsAfter(metricsPath, state.step);
    log.info({ step: state.step, dir: checkpoint.dir }, "resumed from checkpoint");
  }
  const totalSteps = totalStepsOf(config, options.trainData.length);
  const run: LoopRun = {
    options,
    config,
    log,
    pollMs: options.pollIntervalMs ?? 100,
    modelName,
    policies,
    metricsPath,
    totalSteps,
    stopAt: Math.min(totalSteps, state.step + (options.stopAfterSteps ?? Number.POSITIVE_INFINITY)),
    seed: state.seed,
    cursor: new DataCursor(options.trainData, state.seed, state.data),
    tracker: new GroupTracker(client),
    lateWatch: new LateRewardWatch(),
    pending: [],
    policyVersion: state.policyVersion,
    step: state.step,
    ran: [],
    anySucceeded: state.step > 0,
  };
  await publishPolicies(run);
  for (const name of options.baseModels ?? []) {
    await registerEndpoints(client, name, options.serving.endpoints, 0, proxyRegistrationOf(config));
  }
  for (const plan of state.pending) {
    await launchGroup(client, plan, config);
    run.pending.push(plan);
  }
  return run;
}

/** One step: launch, wait, update the policy behind a paused proxy, validate, record, checkpoint. */
async function runStep(run: LoopRun): Promise<void> {
  const { options } = run;
  options.signal?.throwIfAborted();
  const stepStarted = performance.now();
  await launchGroups(run);
  const groups = await collectGroups(run);
  const waitS = (performance.now() - stepStarted) / 1000;
  const versionAtTrain = run.policyVersion;
  // 5. Pause the proxy and drain the calls in flight: no call may straddle the weight update. The proxy is resumed
  //    on every way out of 6–7 (error, abort), and the pause's lease ends it should this process die.
  //    A serving that shares the trainer's accelerator (a collocated vLLM) hands its memory over around 6–7.
  const update = await withPausedProxy(options.client, pauseSettings(run), run.log, (drainS) => {
    const body = () => updatePolicy(run, groups.chosen, drainS);
    return options.serving.aroundUpdate ? options.serving.aroundUpdate(body) : body();
  });
  run.step += 1;
  // Rewards stored after the trainer read their rollout (earlier steps' rollouts) were not trained: report them.
  const lateRewards = await reportLateRewards(run.lateWatch, options.client, run.log);
  run.lateWatch.watch(groups.chosen.flatMap((g) => g.marks));
  const valRewardMean = await validateAfterStep(run);
  const timing = { waitS, stepS: (performance.now() - stepStarted) / 1000 };
  recordStep(run, { groups, update, versionAtTrain, valRewardMean, lateRewards, ...timing });
  await checkpointIfDue(run);
}

/**
 * 4b. A step whose every rollout failed, in a run where none has succeeded yet, stops the run with
 * {@link AllRolloutsFailed}: the agent cannot run, and updating on nothing would hide it.
 */
function stopIfAgentCannotRun(run: LoopRun, chosen: readonly FinishedGroup[]): void {
  const launched = chosen.reduce((a, g) => a + g.plan.rolloutIds.length, 0);
  const failed = chosen.reduce((a, g) => a + g.failed, 0);
  if (failed < launched) run.anySucceeded = true;
  if (run.anySucceeded || launched === 0) return;
  throw new AllRolloutsFailed(
    run.step,
    chosen.flatMap((g) => g.plan.rolloutIds),
  );
}

/**
 * 4–4c. The step's groups: wait for them ({@link waitForGroups}; a run whose agent cannot run stops here); with
 * dynamic sampling, keep only groups whose rewards differ and launch as many new groups as are missing, up to
 * `max_extra_rounds` more rounds (DAPO, arXiv:2503.14476 §3.2), counting what was sampled and kept.
 */
async function collectGroups(run: LoopRun): Promise<ChosenGroups> {
  const first = await waitForGroups(run);
  stopIfAgentCannotRun(run, first.chosen);
  const { dynamic_sampling: settings, train_batch_size: batchSize } = run.config;
  if (!settings.enabled) return { ...first, sampling: null };
  const options = batchOptionsFromConfig(run.config);
  const rollouts = (groups: readonly FinishedGroup[]) => groups.reduce((a, g) => a + g.plan.rolloutIds.length, 0);
  const cost: SamplingCost = { rolloutsSampled: 0, rolloutsKept: 0, groupsDropped: 0, extraRounds: 0 };
  const kept: FinishedGroup[] = [];
  let round = first;
  let staleGroupsDropped = first.staleGroupsDropped;
  for (;;) {
    cost.rolloutsSampled += rollouts(round.chosen);
    const split = keepGroupsWithSpread(round.chosen, options, batchSize - kept.length);
    kept.push(...split.kept);
    cost.groupsDropped += split.dropped;
    if (kept.length >= batchSize || cost.extraRounds >= settings.max_extra_rounds) break;
    cost.extraRounds += 1;
    for (let i = kept.length; i < batchSize; i++) await launchOneGroup(run);
    round = await waitForGroups(run);
    staleGroupsDropped += round.staleGroupsDropped;
  }
  cost.rolloutsKept = rollouts(kept);
  run.log.info({ step: run.step + 1, ...cost }, "dynamic sampling");
  return { chosen: kept, staleGroupsDropped, sampling: cost };
}

/**
 * 3. Launch groups: sync keeps train_batch_size in flight; async admits groups by the staleness budget, at most
 * (max_staleness + 1) · train_batch_size and async_train_batch_size in flight ({@link inFlightLimit}), so each can
 * train within max_staleness versions; never more than the remaining steps can use.
 */
async function launchGroups(run: LoopRun): Promise<void> {
  const { config } = run;
  const inFlight = config.async.enabled
    ? inFlightLimit(stalenessBudget(config), config.async.async_train_batch_size)
    : config.train_batch_size;
  const stillNeeded = (run.totalSteps - run.step) * config.train_batch_size;
  while (run.pending.length < Math.min(inFlight, stillNeeded)) await launchOneGroup(run);
}

/** Launches the group of the data cursor's next input. */
async function launchOneGroup(run: LoopRun): Promise<void> {
  const { config } = run;
  const { item, epoch } = run.cursor.next();
  const base = trainGroupId(config.name, epoch, item.index);
  const fields = { dataIndex: item.index, input: item.input, isTrain: true, batchIdx: run.step };
  const plan = planGroup(base, { ...fields, launchVersion: run.policyVersion }, config.n);
  await launchGroup(run.options.client, plan, config);
  run.pending.push(plan);
}

/** Sync: the step trains once every launched group is complete, on all of them. */
function syncChoice(complete: readonly GroupPlan[], pending: readonly GroupPlan[]): GroupPlan[] | null {
  return pending.length > 0 && complete.length === pending.length ? [...complete] : null;
}

/** The staleness budget of a config: B = train_batch_size groups per step, η = async.max_staleness versions. */
function stalenessBudget(config: Readonly<TrainerConfig>): StalenessBudget {
  return { trainBatchSize: config.train_batch_size, maxStaleness: config.async.max_staleness };
}

/**
 * Drops the pending groups that cannot train within max_staleness whatever the step does ({@link pastDeadline}):
 * never under the admission bound, only after a resume with a smaller max_staleness or train_batch_size.
 * @returns how many were dropped
 */
function dropPastDeadline(run: LoopRun): number {
  const doomed = pastDeadline(run.pending, run.policyVersion, stalenessBudget(run.config));
  const doomedIds = new Set(doomed.map((plan) => plan.groupId));
  for (const plan of doomed) {
    run.tracker.forget(plan);
    const deadline = plan.launchVersion + run.config.async.max_staleness;
    run.log.warn({ groupId: plan.groupId, launchVersion: plan.launchVersion, deadline }, "dropped group past deadline");
  }
  run.pending = run.pending.filter((plan) => !doomedIds.has(plan.groupId));
  return doomed.length;
}

/**
 * 4. Wait. Sync: every launched group ({@link syncChoice}). Async: the first train_batch_size complete groups in
 * launch order, once training them leaves every other pending group able to train within max_staleness
 * ({@link chooseWithinBudget}); the rest carry over. Slow groups are waited for, never dropped (see staleness.ts).
 */
async function waitForGroups(run: LoopRun): Promise<ChosenGroups> {
  const { config, options, tracker } = run;
  const finished = new Map<string, FinishedGroup>();
  const staleGroupsDropped = config.async.enabled ? dropPastDeadline(run) : 0;
  if (staleGroupsDropped > 0) await launchGroups(run);
  for (;;) {
    options.signal?.throwIfAborted();
    await tracker.poll();
    for (const plan of run.pending) {
      if (!finished.has(plan.groupId) && tracker.isComplete(plan)) {
        const group = await readFinishedGroup(options.client, tracker, plan, config);
        if (options.judge !== undefined) await judgeFinishedGroup(run, options.judge, group);
        finished.set(plan.groupId, group);
      }
    }
    const plans = config.async.enabled
      ? chooseWithinBudget(run.pending, (p) => finished.has(p.groupId), run.policyVersion, stalenessBudget(config))
      : syncChoice(
          run.pending.filter((p) => finished.has(p.groupId)),
          run.pending,
        );
    if (plans !== null) {
      const chosenIds = new Set(plans.map((p) => p.groupId));
      run.pending = run.pending.filter((p) => !chosenIds.has(p.groupId));
      for (const plan of plans) tracker.forget(plan);
      return { chosen: plans.map((p) => finished.get(p.groupId) as FinishedGroup), staleGroupsDropped };
    }
    await new Promise((resolve) => setTimeout(resolve, run.pollMs));
  }
}

/**
 * 4a. Judge a complete group (`judge` section): its completed rollouts get the judge's verdict as events, and the
 * group's records and read marks take them in, so the late-reward watch does not count them as late.
 */
async function judgeFinishedGroup(run: LoopRun, judge: GroupJudge, group: FinishedGroup): Promise<void> {
  const completed = group.records.filter((record) => run.tracker.state(record.rolloutId) !== "failed");
  const judged = await judgeGroup(run.options.client, judge, group.plan.input, completed, run.config);
  const byId = new Map(judged.records.map((record) => [record.rolloutId, record]));
  group.records = group.records.map((record) => byId.get(record.rolloutId) ?? record);
  group.marks = group.marks.map((mark) => {
    const events = byId.get(mark.rolloutId)?.events ?? [];
    return { ...mark, readUpTo: events.reduce((top, e) => Math.max(top, e.sequence), mark.readUpTo) };
  });
  if (judged.errors > 0) {
    run.log.warn({ groupId: group.plan.groupId, errors: judged.errors }, "judge gave some rollouts no reward");
  }
}

/** The pause around a weight update. */
function pauseSettings(run: LoopRun): PauseSettings {
  return {
    retryAfterSeconds: run.config.pause_retry_after_seconds,
    leaseSeconds: run.config.pause_lease_seconds,
    reason: `weight update to policy version ${run.policyVersion + 1}`,
    pollMs: run.pollMs,
    ...(run.options.signal ? { signal: run.options.signal } : {}),
  };
}

/** Steps 6–7 while the proxy is paused: batch, train, publish. */
async function updatePolicy(run: LoopRun, chosen: readonly FinishedGroup[], drainS: number): Promise<PolicyUpdate> {
  const updateStarted = performance.now();
  const foreign = reportForeignCalls(run, chosen);
  const { batch, tisCappedTokens, recomputedRows, mismatch } = await prepareBatch(run, chosen);
  const updates = await trainOnBatch(run, batch);
  await publishIfUpdated(run, updates);
  const updateS = (performance.now() - updateStarted) / 1000;
  return { batch, updates, drainS, updateS, tisCappedTokens, recomputedRows, mismatch, foreign };
}

/**
 * Warns, per agent with its own policy, about its calls that another model answered (a gateway without the agent
 * routes): that policy is training on samples it did not make.
 */
function reportForeignCalls(run: LoopRun, chosen: readonly FinishedGroup[]) {
  const foreign = foreignCalls(
    chosen.flatMap((g) => g.records),
    run.policies,
  );
  for (const [agent, { calls, models }] of foreign) {
    const own = run.policies.find((p) => p.agent === agent)?.modelName;
    run.log.warn(
      { step: run.step, agent, calls, servedBy: models, expected: own },
      `agent ${agent}'s calls were served by ${models.join(", ")}, not its policy ${own}: give the gateway ` +
        `agent_routes {${agent}: ${own}} (a gateway arclight train did not start has none)`,
    );
  }
  return foreign;
}

/**
 * 6. Rows, advantages, loss weights; rows lacking recorded logprobs get recomputed ones (or were dropped); async
 * (or `mismatch.recompute_old_logprobs`) switches to recomputed π_old logprobs with the mismatch correction.
 */
async function prepareBatch(run: LoopRun, chosen: readonly FinishedGroup[]) {
  const { config } = run;
  const batch: StepBatch = assembleBatch(
    chosen.flatMap((g) => g.records),
    batchOptionsFromConfig(config),
  );
  if (batch.missingLogprobRollouts.length > 0) {
    const rolloutIds = batch.missingLogprobRollouts;
    run.log.warn({ step: run.step, rolloutIds, mode: config.missing_logprobs }, "rows without recorded logprobs");
  }
  if ((config.async.enabled || config.mismatch.recompute_old_logprobs) && batch.rows.length > 0) {
    const all = batch.rows.map((_, i) => i);
    const proximal = await policyLogprobs(
      batch.rows,
      batch.engineRows.map((row) => row.tokenIds),
      all,
      run.policies,
    );
    const corrected = withMismatchCorrection(batch, proximal, mismatchSettingsOf(config));
    return {
      batch: corrected.batch,
      tisCappedTokens: corrected.stats.cappedTokens,
      recomputedRows: batch.rows.filter(lacksLogprobs).length,
      mismatch: corrected.stats,
    };
  }
  return { ...(await recomputeMissingLogprobs(run.policies, batch)), tisCappedTokens: 0, mismatch: null };
}

/**
 * 7. Update: max_ppo_update_times epochs over the batch, one optimiser step per mini-batch of ppo_mini_batch_size
 * groups (the PPO clip bounds how far the later ones move from the sampling policy). A mini-batch the engine skipped
 * as non-finite changed nothing.
 */
async function trainOnBatch(run: LoopRun, batch: StepBatch): Promise<AgentTrainMetrics[]> {
  const { config, options } = run;
  const updates: AgentTrainMetrics[] = [];
  if (batch.counts.tokens === 0) return updates;
  const { loss, optimizer } = lossAndOptimizer(config);
  const rows = await withReferenceLogprobs(batch.engineRows, options.referenceEngine, config.loss.kl_coef);
  // A mini-batch whose rows all have an empty mask (e.g. every response truncated) has nothing to train.
  const miniBatches = miniBatchIndices(
    batch.rows.map((row) => row.dataId),
    config.ppo_mini_batch_size,
  ).filter((indices) => indices.some((i) => (rows[i] as TrainRow).lossMask.some((m) => m > 0)));
  for (let k = 0; k < config.max_ppo_update_times; k++) {
    for (const miniBatch of miniBatches) {
      // Each policy takes one optimiser step on its own rows of the mini-batch.
      for (const { policy, indices } of sharesOf(batch.rows, miniBatch, run.policies)) {
        if (!indices.some((i) => (rows[i] as TrainRow).lossMask.some((m) => m > 0))) continue;
        const rolloutIds = indices.map((i) => batch.rows[i]?.rolloutId ?? "");
        const policyRows = indices.map((i) => rows[i] as TrainRow);
        const metrics = await policy.engine.trainStep(policyRows, withNormalizer(loss, config, rolloutIds), optimizer);
        updates.push({ ...metrics, agent: policy.agent });
        if (metrics.nonFiniteSkipped === true) {
          const { loss: lossValue, gradNorm } = metrics;
          const ids = [...new Set(rolloutIds)];
          run.log.warn({ step: run.step, rolloutIds: ids, loss: lossValue, gradNorm }, "skipped a non-finite update");
        }
      }
    }
  }
  return updates;
}

/** `token-sum-norm`: the update's constant denominator (its rollouts × `loss.norm_length`); other losses as they are. */
function withNormalizer(loss: LossConfig, config: TrainerConfig, rolloutIds: readonly string[]): LossConfig {
  if (loss.kind !== "ppo" || loss.aggregation !== "constant") return loss;
  const normLength = config.loss.norm_length ?? config.aggregator.max_response_length;
  return { ...loss, normalizer: tokenSumNormalizer(rolloutIds, normLength) };
}

/** Publishes the new weights and bumps the version, unless every update was skipped (then nothing changed). */
async function publishIfUpdated(run: LoopRun, updates: readonly TrainMetrics[]): Promise<void> {
  if (!updates.some((m) => m.nonFiniteSkipped !== true)) {
    run.log.warn({ step: run.step, updates: updates.length }, "no update applied this step; weights unchanged");
    return;
  }
  run.policyVersion += 1;
  await publishPolicies(run);
}

/**
 * Makes the servers serve every policy's current weights, then registers each policy's model name at the run's
 * version (a policy without rows this step is re-registered unchanged: its version N is still exactly its weights).
 */
async function publishPolicies(run: LoopRun): Promise<void> {
  const { client, serving } = run.options;
  await serving.publish(run.policies, run.policyVersion);
  for (const { modelName } of run.policies) {
    await registerEndpoints(client, modelName, serving.endpoints, run.policyVersion, proxyRegistrationOf(run.config));
  }
}

/** 8. Validation every val_interval steps (is_train=false rollouts, one per input, reward mean); null otherwise. */
async function validateAfterStep(run: LoopRun): Promise<number | null> {
  const { config, options } = run;
  const validate = options.valData && config.val_interval > 0 && run.step % config.val_interval === 0;
  if (!validate) return null;
  const result = await runValidation(options.client, run.tracker, options.valData ?? [], {
    config,
    step: run.step,
    policyVersion: run.policyVersion,
    pollMs: run.pollMs,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (result === null) return null;
  options.reporter?.onValidation?.(run.step, result.rows);
  return result.rewardMean;
}

/** What {@link recordStep} writes about one step. */
interface StepRecord {
  groups: ChosenGroups;
  update: PolicyUpdate;
  versionAtTrain: number;
  valRewardMean: number | null;
  lateRewards: number;
  waitS: number;
  stepS: number;
}

/** 9. Metrics: appended to metrics.jsonl, kept for the summary, reported, logged. */
function recordStep(run: LoopRun, record: StepRecord): void {
  const { chosen, staleGroupsDropped } = record.groups;
  const { batch, updates } = record.update;
  const lag = lagStats(
    record.versionAtTrain,
    batch.rows.map((row) => ({ policyVersions: row.policyVersions, tokens: trainableTokens(row) })),
    chosen.map((g) => g.oldestVersion),
  );
  const metrics = stepMetrics(
    {
      step: run.step,
      policyVersion: run.policyVersion,
      rewards: batch.rewards,
      valRewardMean: record.valRewardMean,
      failedRollouts: chosen.reduce((a, g) => a + g.failed, 0),
      failedDropped: chosen.reduce((a, g) => a + g.failedDropped, 0),
      staleGroupsDropped,
      carriedOver: run.pending.length,
      lag,
      waitS: record.waitS,
      drainS: record.update.drainS,
      updateS: record.update.updateS,
      stepS: record.stepS,
      train: meanTrainMetrics(updates),
      tisCappedTokens: record.update.tisCappedTokens,
      mismatch: record.update.mismatch,
      nonFiniteSteps: updates.filter((m) => m.nonFiniteSkipped === true).length,
      recomputedLogprobRows: record.update.recomputedRows,
      lateRewardsMissed: record.lateRewards,
      sampling: record.groups.sampling ?? null,
    },
    batch.counts,
  );
  Object.assign(metrics, perPolicyMetrics(batch.rows, updates, run.policies, record.update.foreign));
  appendMetrics(run.metricsPath, metrics);
  run.ran.push(metrics);
  run.options.reporter?.onStep(metrics, run.totalSteps);
  run.log.info(
    { step: run.step, policyVersion: run.policyVersion, rewardMean: metrics["reward/mean"], rows: metrics.rows },
    "step done",
  );
}

/** A checkpoint every checkpoint_interval steps, and at the end. */
async function checkpointIfDue(run: LoopRun): Promise<void> {
  const { config, step } = run;
  const checkpointDue = config.checkpoint_interval > 0 && step % config.checkpoint_interval === 0;
  if (!checkpointDue && step !== run.totalSteps) return;
  const saved: TrainerState = {
    step,
    policyVersion: run.policyVersion,
    data: run.cursor.current,
    seed: run.seed,
    pending: run.pending,
  };
  const dir = await saveTrainerCheckpoint(run.options.runDir, run.policies, saved);
  run.options.reporter?.onCheckpoint?.(step, dir);
}

/** Checks the watched rollouts for rewards stored after they were read; warns naming them. @returns their count */
async function reportLateRewards(watch: LateRewardWatch, client: GatewayClient, log: Logger): Promise<number> {
  const late = await watch.check(client);
  if (late.count > 0) {
    log.warn(
      { count: late.count, rolloutIds: late.rolloutIds },
      "rewards arrived after their rollout was read; not trained",
    );
  }
  return late.count;
}

/**
 * Fills the logprobs missing from some rows with the engine's (the weights the step starts from: in sync mode the
 * weights that sampled them), so PPO sees real ratios instead of treating the rows as on-policy.
 */
async function recomputeMissingLogprobs(
  policies: readonly TrainedPolicy[],
  batch: StepBatch,
): Promise<{ batch: StepBatch; recomputedRows: number }> {
  const indices = batch.rows.flatMap((row, i) => (lacksLogprobs(row) ? [i] : []));
  if (indices.length === 0) return { batch, recomputedRows: 0 };
  const tokenIds = batch.engineRows.map((row) => row.tokenIds);
  const logprobs = await policyLogprobs(batch.rows, tokenIds, indices, policies);
  const { rows } = withRecomputedLogprobs(batch.rows, indices, logprobs);
  return { batch: { ...batch, rows, engineRows: rows.map(toEngineRow) }, recomputedRows: indices.length };
}

/** Adds the reference policy's logprobs to each row when the KL term is on. */
async function withReferenceLogprobs(
  rows: TrainRow[],
  reference: Engine | undefined,
  klCoef: number,
): Promise<TrainRow[]> {
  if (klCoef === 0 || reference === undefined) return rows;
  const refLogprobs = await reference.logprobs(rows.map((row) => row.tokenIds));
  return rows.map((row, i) => ({ ...row, refLogprobs: refLogprobs[i] ?? [] }));
}
