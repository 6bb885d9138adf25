/**
 * @module One SFT run on recorded traces, read top to bottom: select rollouts from a gateway, turn them into rows with
 * the trainer's aggregation, hold some out, measure the held-out loss (and, when given, the reward) before, run the
 * SFT steps, measure again, save the engine's checkpoint. `arclight sft` and the demo's warm start both run it.
 */
import { join } from "node:path";
import type { Engine, TrainMetrics, TrainRow } from "../engine/engine.js";
import type { GatewayClient } from "../gateway/client.js";
import { appendMetrics } from "./metrics.js";
import { demonstrationRows, heldOutLoss, sftBatchOptions, splitHeldOut, warmStart } from "./sft.js";
import type { SftConfig } from "./sft-config.js";
import { selectRollouts } from "./sft-select.js";

/** What {@link runSft} works with. */
export interface SftRunOptions {
  config: Readonly<SftConfig>;
  /** Client of the gateway holding the recorded rollouts. */
  client: GatewayClient;
  /** The policy to fine-tune (its policy version grows by the steps run). */
  engine: Engine;
  /** Where the engine checkpoint is written (e.g. runs/NAME/checkpoint). */
  checkpointDir: string;
  /** metrics.jsonl to append to; null: none. */
  metricsPath: string | null;
  /** Mean validation reward of the served policy (real rollouts); omitted: no reward validation. */
  validateReward?: (phase: "before" | "after") => Promise<number>;
  /** Called once the rows are built, before any step. */
  onRows?: (rows: SftRows) => void;
  /** Called after each step. */
  onStep?: (step: number, metrics: TrainMetrics) => void;
  /** Called with every metrics record, as metrics.jsonl gets it (also when `metricsPath` is null). */
  onMetrics?: (record: Record<string, number | null>) => void;
  /** Checked between steps; the run rejects with its reason once it is aborted. */
  signal?: AbortSignal;
}

/** The rows of one run and what was selected. */
export interface SftRows {
  /** Succeeded rollouts matching the id, metadata and data-id rules. */
  matched: number;
  /** Rollouts kept after the reward threshold and best-of-N. */
  selected: number;
  /** Mean final reward of the selected rollouts (0 when none). */
  selectedRewardMean: number;
  train: TrainRow[];
  heldOut: TrainRow[];
  /** Prompt-prefix breaks the aggregation met. */
  mismatches: number;
}

/** What one SFT run measured. */
export interface SftSummary {
  matched: number;
  selected: number;
  selectedRewardMean: number;
  trainRows: number;
  heldOutRows: number;
  mismatches: number;
  steps: number;
  /** Training loss of the first and the last step (nats per masked token). */
  firstLoss: number;
  lastLoss: number;
  /** Held-out loss before and after (nats per masked token); null without held-out rows. */
  heldOutLossBefore: number | null;
  heldOutLossAfter: number | null;
  /** Mean validation reward before and after; null without reward validation. */
  rewardBefore: number | null;
  rewardAfter: number | null;
  /** Masked tokens trained per second of train steps (tokens/s). */
  tokensPerSecond: number;
  trainSeconds: number;
  checkpointDir: string;
}

/**
 * Selects the rollouts and builds the rows.
 * @throws {RangeError} when no rollout is selected or the selection yields no trainable row
 */
async function buildRows(options: SftRunOptions): Promise<SftRows> {
  const { config } = options;
  const selected = await selectRollouts(options.client, config.select, config.reward_fillna_value);
  if (selected.records.length === 0) {
    throw new RangeError(
      `sft: no rollout selected (${selected.matched} succeeded rollouts matched id/metadata/data ids)`,
    );
  }
  const batchOptions = sftBatchOptions(config.aggregator, config.reward_fillna_value);
  const built = demonstrationRows(selected.records, selected.rewards, batchOptions, Number.NEGATIVE_INFINITY);
  if (built.rows.length === 0)
    throw new RangeError(`sft: the ${selected.records.length} selected rollouts gave no rows`);
  const split = splitHeldOut(built.rows, config.sft.val_fraction, config.seed);
  const rewardSum = selected.rewards.reduce((a, b) => a + b, 0);
  return {
    matched: selected.matched,
    selected: selected.records.length,
    selectedRewardMean: rewardSum / selected.rewards.length,
    train: split.train,
    heldOut: split.heldOut,
    mismatches: built.mismatches,
  };
}

/**
 * Runs SFT: select, build rows, measure before, train, measure after, save the checkpoint. metrics.jsonl gets
 * `val/loss` (and `val/reward_mean`) at step 0 and after the last step, and `sft/loss`, `sft/grad_norm`,
 * `sft/tokens`, `time/step_s` every `log_interval` steps.
 * @param options - config, source gateway client, engine, checkpoint directory, metrics file, callbacks
 * @returns what the run measured
 * @throws {RangeError} when nothing trainable is selected; the signal's reason once aborted
 */
export async function runSft(options: SftRunOptions): Promise<SftSummary> {
  const { config, engine } = options;
  const rows = await buildRows(options);
  options.onRows?.(rows);
  const record = (values: Record<string, number | null>) => {
    if (options.metricsPath !== null) appendMetrics(options.metricsPath, values);
    options.onMetrics?.(values);
  };
  const heldOutLossBefore = await heldOutLoss(engine, rows.heldOut);
  const rewardBefore = (await options.validateReward?.("before")) ?? null;
  record({ step: 0, "val/loss": heldOutLossBefore, "val/reward_mean": rewardBefore });
  const started = performance.now();
  let stepStarted = started;
  let tokens = 0;
  const metrics = await warmStart(engine, rows.train, {
    steps: config.sft.steps,
    batchSize: config.sft.batch_size,
    learningRate: config.sft.learning_rate,
    decaySteps: config.sft.lr_decay_steps,
    weightDecay: config.sft.weight_decay,
    maxGradNorm: config.sft.max_grad_norm,
    microBatchSize: config.sft.micro_batch_size,
    seed: config.seed,
    ...(options.signal ? { signal: options.signal } : {}),
    onStep: (step, m) => {
      tokens += m.tokens;
      const now = performance.now();
      if (step % config.sft.log_interval === 0 || step === config.sft.steps) {
        record({
          step,
          "sft/loss": m.loss,
          "sft/grad_norm": m.gradNorm,
          "sft/tokens": m.tokens,
          "time/step_s": (now - stepStarted) / 1000,
        });
      }
      stepStarted = now;
      options.onStep?.(step, m);
    },
  });
  const trainSeconds = (performance.now() - started) / 1000;
  const heldOutLossAfter = await heldOutLoss(engine, rows.heldOut);
  const rewardAfter = (await options.validateReward?.("after")) ?? null;
  record({ step: metrics.length, "val/loss": heldOutLossAfter, "val/reward_mean": rewardAfter });
  await engine.saveCheckpoint(options.checkpointDir);
  return {
    matched: rows.matched,
    selected: rows.selected,
    selectedRewardMean: rows.selectedRewardMean,
    trainRows: rows.train.length,
    heldOutRows: rows.heldOut.length,
    mismatches: rows.mismatches,
    steps: metrics.length,
    firstLoss: metrics[0]?.loss ?? 0,
    lastLoss: metrics.at(-1)?.loss ?? 0,
    heldOutLossBefore,
    heldOutLossAfter,
    rewardBefore,
    rewardAfter,
    tokensPerSecond: trainSeconds > 0 ? tokens / trainSeconds : 0,
    trainSeconds,
    checkpointDir: options.checkpointDir,
  };
}

/**
 * Where `arclight sft` writes its engine checkpoint: `runs/NAME/checkpoint` (what `arclight train --init-from` and
 * `arclight eval` load).
 * @param runDir - runs/NAME
 */
export function sftCheckpointDir(runDir: string): string {
  return join(runDir, "checkpoint");
}
