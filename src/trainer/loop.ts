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
import { assembleBatch, batchOptionsFromConfig, type StepBatch, withTruncatedIsBatch } from "./batch.js";
import { engineCheckpointDir, loadLatestCheckpoint, saveTrainerCheckpoint, type TrainerState } from "./checkpoint.js";
import type { TrainerConfig } from "./config.js";
import { DataCursor, type DataItem } from "./data-order.js";
import {
  type FinishedGroup,
  launchGroup,
  type PauseSettings,
  readFinishedGroup,
  registerEndpoints,
  withPausedProxy,
} from "./gateway-io.js";
import { LateRewardWatch } from "./late-rewards.js";
import { engineAggregation } from "./loss-weights.js";
import { appendMetrics, meanTrainMetrics, type StepMetrics, stepMetrics, truncateMetricsAfter } from "./metrics.js";
import { miniBatchIndices } from "./mini-batches.js";
import { lacksLogprobs, withRecomputedLogprobs } from "./missing-logprobs.js";
import { type GroupPlan, GroupTracker, planGroup } from "./rollout-groups.js";
import type { PolicyServing } from "./serving.js";
import { toEngineRow } from "./training-row.js";
import { runValidation } from "./validation.js";

/** Receives each step's metrics (console table, progress bar); see console-report.ts. */
export interface StepReporter {
  onStep(metrics: StepMetrics, totalSteps: number): void;
  close(): void;
}

/** Everything the loop drives. */
export interface TrainLoopOptions {
  config: Readonly<TrainerConfig>;
  client: GatewayClient;
  /** The engine being trained (and, collocated, the one serving). */
  engine: Engine;
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
      clipLow: config.loss.clip_low,
      clipHigh: config.loss.clip_high,
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

/** Fails early on settings the engine cannot honour. */
function checkSetup(options: TrainLoopOptions): void {
  const { config, engine } = options;
  const longest = config.aggregator.max_prompt_length + config.aggregator.max_response_length;
  if (longest > engine.contextLength) {
    throw new RangeError(
      `aggregator.max_prompt_length + aggregator.max_response_length = ${longest} tokens exceed the engine's ` +
        `context of ${engine.contextLength} tokens: set them in the config so that they sum to at most ` +
        `${engine.contextLength} (e.g. aggregator: {max_prompt_length: ${Math.floor(engine.contextLength / 2)}, ` +
        `max_response_length: ${Math.floor(engine.contextLength / 2)}})`,
    );
  }
  if (config.loss.kl_coef > 0 && options.referenceEngine === undefined) {
    throw new RangeError("loss.kl_coef > 0 needs a reference engine (the initial weights)");
  }
}

/**
 * Runs (or resumes) training to the configured number of steps.
 * @param options - config, gateway client, engine, serving, data, run directory
 * @returns steps done, final policy version, this call's metrics
 * @throws {RangeError} for settings the engine cannot honour (see `checkSetup`)
 * @throws whatever the gateway client or engine throws outside a single rollout's data (network gone, engine failure)
 */
export async function runTraining(options: TrainLoopOptions): Promise<TrainSummary> {
  checkSetup(options);
  const { config, client, engine, serving } = options;
  const log = (options.logger ?? pino({ level: "silent" })).child({ component: "trainer" });
  const pollMs = options.pollIntervalMs ?? 100;
  const modelName = options.modelName ?? "policy";
  const metricsPath = join(options.runDir, "metrics.jsonl");
  const totalSteps = totalStepsOf(config, options.trainData.length);
  const { loss, optimizer } = lossAndOptimizer(config);
  const batchOptions = batchOptionsFromConfig(config);

  // 1. State: fresh, or the latest checkpoint (engine weights + optimiser, step, data cursor, pending groups).
  let state: TrainerState = { step: 0, policyVersion: 0, data: { epoch: 0, index: 0 }, seed: config.seed, pending: [] };
  const checkpoint = options.resume ? loadLatestCheckpoint(options.runDir) : null;
  if (checkpoint !== null) {
    state = checkpoint.state;
    await engine.loadCheckpoint(engineCheckpointDir(checkpoint.dir));
    truncateMetricsAfter(metricsPath, state.step);
    log.info({ step: state.step, dir: checkpoint.dir }, "resumed from checkpoint");
  }
  const cursor = new DataCursor(options.trainData, state.seed, state.data);
  const tracker = new GroupTracker(client);
  const lateWatch = new LateRewardWatch();
  let pending: GroupPlan[] = [];
  let policyVersion = state.policyVersion;
  let step = state.step;
  const ran: StepMetrics[] = [];
  const stopAt = Math.min(totalSteps, step + (options.stopAfterSteps ?? Number.POSITIVE_INFINITY));

  // 2. Serve the policy: register the endpoints with the current version, re-create the groups a checkpoint left
  //    pending (same ids: rollouts the gateway still has are reused as they are).
  await serving.publish(engine, policyVersion);
  await registerEndpoints(client, modelName, serving.endpoints, policyVersion);
  for (const plan of state.pending) {
    await launchGroup(client, plan, config);
    pending.push(plan);
  }

  while (step < stopAt) {
    options.signal?.throwIfAborted();
    const stepStarted = performance.now();
    // 3. Launch groups: sync keeps train_batch_size in flight, async async_train_batch_size, never more than the
    //    remaining steps can use.
    const inFlight = config.async.enabled ? config.async.async_train_batch_size : config.train_batch_size;
    const stillNeeded = (totalSteps - step) * config.train_batch_size;
    const launch = async () => {
      while (pending.length < Math.min(inFlight, stillNeeded)) {
        const { item, epoch } = cursor.next();
        const base = `${config.name}-e${epoch}-d${item.index}`;
        const fields = {
          dataIndex: item.index,
          input: item.input,
          isTrain: true,
          batchIdx: step,
          launchVersion: policyVersion,
        };
        const plan = planGroup(base, fields, config.n);
        await launchGroup(client, plan, config);
        pending.push(plan);
      }
    };
    await launch();

    // 4. Wait. Sync: every launched group. Async: the first train_batch_size complete groups (launch order) whose
    //    policy lag is within max_staleness; stale complete groups are dropped and replaced; the rest carry over.
    const finished = new Map<string, FinishedGroup>();
    let staleGroupsDropped = 0;
    let chosen: FinishedGroup[] = [];
    for (;;) {
      options.signal?.throwIfAborted();
      await tracker.poll();
      for (const plan of pending) {
        if (!finished.has(plan.groupId) && tracker.isComplete(plan)) {
          finished.set(plan.groupId, await readFinishedGroup(client, tracker, plan, config));
        }
      }
      const stale = [...finished.values()].filter(
        (g) => g.oldestVersion !== null && policyVersion - g.oldestVersion > config.async.max_staleness,
      );
      for (const group of stale) {
        staleGroupsDropped += 1;
        finished.delete(group.plan.groupId);
        tracker.forget(group.plan);
        pending = pending.filter((p) => p.groupId !== group.plan.groupId);
        log.warn({ groupId: group.plan.groupId, oldestVersion: group.oldestVersion }, "dropped stale group");
      }
      if (stale.length > 0) await launch();
      const complete = pending.filter((p) => finished.has(p.groupId));
      const need = config.async.enabled ? config.train_batch_size : pending.length;
      if (complete.length >= Math.min(need, pending.length) && pending.length > 0) {
        chosen = complete.slice(0, need).map((p) => finished.get(p.groupId) as FinishedGroup);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
    const chosenIds = new Set(chosen.map((g) => g.plan.groupId));
    pending = pending.filter((p) => !chosenIds.has(p.groupId));
    for (const group of chosen) tracker.forget(group.plan);
    const waitS = (performance.now() - stepStarted) / 1000;

    // 5. Pause the proxy and drain the calls in flight: no call may straddle the weight update. The proxy is
    //    resumed on every way out of 6–7 (error, abort), and the pause's lease ends it should this process die.
    const pause: PauseSettings = {
      retryAfterSeconds: config.pause_retry_after_seconds,
      leaseSeconds: config.pause_lease_seconds,
      reason: `weight update to policy version ${policyVersion + 1}`,
      pollMs,
      ...(options.signal ? { signal: options.signal } : {}),
    };
    const versionAtTrain = policyVersion;
    const { batch, updates, drainS, updateS, tisCappedTokens, recomputedRows } = await withPausedProxy(
      client,
      pause,
      log,
      async (drainS) => {
        const updateStarted = performance.now();
        // 6. Rows, advantages, loss weights; rows lacking recorded logprobs get recomputed ones (or were dropped);
        //    async switches to recomputed π_old logprobs with truncated IS.
        let batch: StepBatch = assembleBatch(
          chosen.flatMap((g) => g.records),
          batchOptions,
        );
        if (batch.missingLogprobRollouts.length > 0) {
          const rolloutIds = batch.missingLogprobRollouts;
          log.warn({ step, rolloutIds, mode: config.missing_logprobs }, "rows without recorded logprobs");
        }
        let recomputedRows = 0;
        let tisCappedTokens = 0;
        if (config.async.enabled && batch.rows.length > 0) {
          const proximal = await engine.logprobs(batch.engineRows.map((row) => row.tokenIds));
          const tis = withTruncatedIsBatch(batch, proximal, config.loss.tis_cap);
          tisCappedTokens = tis.tisCappedTokens;
          recomputedRows = batch.rows.filter(lacksLogprobs).length;
          batch = tis;
        } else {
          ({ batch, recomputedRows } = await recomputeMissingLogprobs(engine, batch));
        }

        // 7. Update: max_ppo_update_times epochs over the batch, one optimiser step per mini-batch of
        //    ppo_mini_batch_size groups (the PPO clip bounds how far the later ones move from the sampling policy),
        //    then publish and bump the version. A mini-batch the engine skipped as non-finite changed nothing; a
        //    step where every update was skipped publishes nothing.
        const updates: TrainMetrics[] = [];
        if (batch.counts.tokens > 0) {
          const rows = await withReferenceLogprobs(batch.engineRows, options.referenceEngine, config.loss.kl_coef);
          // A mini-batch whose rows all have an empty mask (e.g. every response truncated) has nothing to train.
          const miniBatches = miniBatchIndices(
            batch.rows.map((row) => row.dataId),
            config.ppo_mini_batch_size,
          ).filter((indices) => indices.some((i) => (rows[i] as TrainRow).lossMask.some((m) => m > 0)));
          for (let k = 0; k < config.max_ppo_update_times; k++) {
            for (const indices of miniBatches) {
              const metrics = await engine.trainStep(
                indices.map((i) => rows[i] as TrainRow),
                loss,
                optimizer,
              );
              updates.push(metrics);
              if (metrics.nonFiniteSkipped === true) {
                const rolloutIds = [...new Set(indices.map((i) => batch.rows[i]?.rolloutId))];
                const { loss: lossValue, gradNorm } = metrics;
                log.warn({ step, rolloutIds, loss: lossValue, gradNorm }, "skipped a non-finite update");
              }
            }
          }
        }
        if (updates.some((m) => m.nonFiniteSkipped !== true)) {
          policyVersion += 1;
          await serving.publish(engine, policyVersion);
          await registerEndpoints(client, modelName, serving.endpoints, policyVersion);
        } else {
          log.warn({ step, updates: updates.length }, "no update applied this step; weights unchanged");
        }
        const updateS = (performance.now() - updateStarted) / 1000;
        return { batch, updates, drainS, updateS, tisCappedTokens, recomputedRows };
      },
    );
    const nonFiniteSteps = updates.filter((m) => m.nonFiniteSkipped === true).length;
    step += 1;
    // Rewards stored after the trainer read their rollout (earlier steps' rollouts) were not trained: report them.
    const lateRewards = await reportLateRewards(lateWatch, client, log);
    lateWatch.watch(chosen.flatMap((g) => g.marks));

    // 8. Validation every val_interval steps (is_train=false rollouts, one per input, reward mean).
    const validate = options.valData && config.val_interval > 0 && step % config.val_interval === 0;
    const valRewardMean = validate
      ? await runValidation(client, tracker, options.valData ?? [], {
          config,
          step,
          policyVersion,
          pollMs,
          ...(options.signal ? { signal: options.signal } : {}),
        })
      : null;

    // 9. Metrics, then a checkpoint every checkpoint_interval steps (and at the end).
    const versions = chosen.flatMap((g) => (g.oldestVersion === null ? [] : [g.oldestVersion]));
    const metrics = stepMetrics(
      {
        step,
        policyVersion,
        rewards: batch.rewards,
        valRewardMean,
        failedRollouts: chosen.reduce((a, g) => a + g.failed, 0),
        failedDropped: chosen.reduce((a, g) => a + g.failedDropped, 0),
        staleGroupsDropped,
        carriedOver: pending.length,
        maxStaleness: versions.length === 0 ? 0 : versionAtTrain - Math.min(...versions),
        waitS,
        drainS,
        updateS,
        stepS: (performance.now() - stepStarted) / 1000,
        train: meanTrainMetrics(updates),
        tisCappedTokens,
        nonFiniteSteps,
        recomputedLogprobRows: recomputedRows,
        lateRewardsMissed: lateRewards,
      },
      batch.counts,
    );
    appendMetrics(metricsPath, metrics);
    ran.push(metrics);
    options.reporter?.onStep(metrics, totalSteps);
    log.info({ step, policyVersion, rewardMean: metrics["reward/mean"], rows: metrics.rows }, "step done");
    const checkpointDue = config.checkpoint_interval > 0 && step % config.checkpoint_interval === 0;
    if (checkpointDue || step === totalSteps) {
      const saved: TrainerState = { step, policyVersion, data: cursor.current, seed: state.seed, pending };
      await saveTrainerCheckpoint(options.runDir, engine, saved);
    }
  }
  await reportLateRewards(lateWatch, client, log);
  options.reporter?.close();
  return { steps: step, policyVersion, metrics: ran };
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
  engine: Engine,
  batch: StepBatch,
): Promise<{ batch: StepBatch; recomputedRows: number }> {
  const indices = batch.rows.flatMap((row, i) => (lacksLogprobs(row) ? [i] : []));
  if (indices.length === 0) return { batch, recomputedRows: 0 };
  const logprobs = await engine.logprobs(indices.map((i) => (batch.engineRows[i] as TrainRow).tokenIds));
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
