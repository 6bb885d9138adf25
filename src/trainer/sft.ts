/**
 * @module SFT on recorded traces: rollouts recorded through the gateway (e.g. a teacher's demonstrations) become
 * training rows by the trainer's own aggregation, and the engine is fine-tuned on their assistant tokens
 * (`{kind: "sft"}`); the loss on held-out rows measures it. `arclight sft` and the demo's warm start run it
 * (through `sft-run.ts`).
 */
import type { Engine, TrainMetrics, TrainRow } from "../engine/engine.js";
import { assembleBatch, type BatchOptions, type RolloutRecord } from "./batch.js";
import type { TrainerConfig } from "./config.js";
import { mulberry32 } from "./data-order.js";

/**
 * Batch options for SFT rows: the aggregator section as the trainer reads it. Advantages are computed by the shared
 * batch assembly but SFT ignores them; rows lacking logprobs are kept (SFT needs none).
 * @param aggregator - the `aggregator` config section (level, length limits)
 * @param rewardFillnaValue - reward of a rollout that posted none
 * @returns the batch options
 */
export function sftBatchOptions(aggregator: TrainerConfig["aggregator"], rewardFillnaValue: number): BatchOptions {
  return {
    level: aggregator.level,
    limits: { maxPromptLength: aggregator.max_prompt_length, maxResponseLength: aggregator.max_response_length },
    advantage: { estimator: "grpo", normByStd: false, rolloutLevel: true, reinforceBaseline: "none" },
    aggregation: "token-mean",
    rewardFillnaValue,
    missingLogprobs: "recompute",
  };
}

/** Rows built from demonstrations, and what was left out. */
export interface DemonstrationRows {
  /** Engine rows: prompt ⧺ response region with the loss mask on the assistant's tokens, [T] each. */
  rows: TrainRow[];
  /** Demonstration rollouts kept (final reward >= minReward). */
  kept: number;
  /** Prompt-prefix breaks the aggregation met (0 when the endpoint returned the template's exact ids). */
  mismatches: number;
}

/**
 * Turns demonstration rollouts into SFT rows with the trainer's batch assembly (the same aggregation that RL uses),
 * keeping only rollouts whose reward is at least `minReward`.
 * @param records - demonstration rollouts with their triplet events
 * @param rewards - final reward of each record, same order
 * @param options - batch options (aggregation level, length limits); advantages are ignored by SFT
 * @param minReward - keep rollouts with at least this reward (a teacher's failed rollouts teach nothing)
 * @returns the rows and counts
 */
export function demonstrationRows(
  records: readonly RolloutRecord[],
  rewards: readonly number[],
  options: BatchOptions,
  minReward: number,
): DemonstrationRows {
  const good = records.filter((_, i) => (rewards[i] ?? Number.NEGATIVE_INFINITY) >= minReward);
  const batch = assembleBatch(good, options);
  const rows = batch.engineRows.filter((row) => row.lossMask.some((m) => m === 1));
  return { rows, kept: good.length, mismatches: batch.mismatches.length };
}

/** Settings of the warm start. */
export interface WarmStartOptions {
  /** Optimiser steps. */
  steps: number;
  /** Rows per step. */
  batchSize: number;
  learningRate: number;
  /**
   * Steps at the end over which the learning rate falls linearly: step `steps - d + i` (i = 1 … d) uses
   * `learningRate · (d - i + 1) / d`, so the last step uses `learningRate / d`. Default 0: constant.
   */
  decaySteps?: number;
  /** AdamW decoupled weight decay; default 0. */
  weightDecay?: number;
  /** Global gradient-norm clip, 0 disables it; default 1. */
  maxGradNorm?: number;
  /** Rows per micro-batch; default 16. */
  microBatchSize?: number;
  /** Seed of the row order (reshuffled each pass). */
  seed: number;
  /** Called after each step. */
  onStep?: (step: number, metrics: TrainMetrics) => void;
  /** Checked before each step; the warm start rejects with its reason once it is aborted. */
  signal?: AbortSignal;
}

/**
 * Fine-tunes `engine` on demonstration rows: `steps` AdamW steps of `batchSize` rows each, drawn without replacement
 * from a seeded shuffle (reshuffled after every pass), token-mean cross-entropy over the masked tokens.
 * @param engine - the policy to warm-start (its policy version grows by `steps`)
 * @param rows - SFT rows from {@link demonstrationRows}
 * @param options - steps, batch size, learning rate, seed, abort signal
 * @returns each step's train metrics (loss in nats per masked token)
 * @throws {RangeError} when there are no rows; the signal's reason once it is aborted
 */
export async function warmStart(
  engine: Engine,
  rows: readonly TrainRow[],
  options: WarmStartOptions,
): Promise<TrainMetrics[]> {
  if (rows.length === 0) throw new RangeError("warm start: no demonstration rows to train on");
  const random = mulberry32(options.seed);
  let order: number[] = [];
  const metrics: TrainMetrics[] = [];
  const optimizer = {
    weightDecay: options.weightDecay ?? 0,
    maxGradNorm: options.maxGradNorm ?? 1,
    microBatchSize: options.microBatchSize ?? 16,
  };
  for (let step = 1; step <= options.steps; step++) {
    // A train step holds the event loop for its whole duration: yield between steps so a Ctrl-C handler can run.
    await new Promise((resolve) => setImmediate(resolve));
    options.signal?.throwIfAborted();
    const batch: TrainRow[] = [];
    while (batch.length < options.batchSize) {
      if (order.length === 0) order = shuffled(rows.length, random);
      batch.push(rows[order.pop() as number] as TrainRow);
    }
    const learningRate = decayedLearningRate(options, step);
    const m = await engine.trainStep(batch, { kind: "sft", aggregation: "token-mean" }, { ...optimizer, learningRate });
    metrics.push(m);
    options.onStep?.(step, m);
  }
  return metrics;
}

/**
 * The learning rate of one warm-start step: constant, then falling linearly over the last `decaySteps` steps.
 * @param options - steps, learning rate and decay steps (more decay steps than steps: decays from the first)
 * @param step - 1 … steps
 * @returns the learning rate, > 0
 */
export function decayedLearningRate(
  options: Pick<WarmStartOptions, "steps" | "learningRate" | "decaySteps">,
  step: number,
): number {
  const decay = Math.min(options.decaySteps ?? 0, options.steps);
  const left = options.steps - step + 1; // steps left, this one included
  return left > decay ? options.learningRate : (options.learningRate * left) / decay;
}

/**
 * The SFT loss of rows under the engine's current weights, without training: the mean negative logprob over every
 * masked token (nats per token, the same token-mean `trainStep` reports for `{kind: "sft"}`).
 * @param engine - the policy
 * @param rows - rows with their loss masks, [T] each
 * @returns nats per masked token; null when the rows have no masked token
 */
export async function heldOutLoss(engine: Engine, rows: readonly TrainRow[]): Promise<number | null> {
  if (rows.length === 0) return null;
  const logprobs_D_T = await engine.logprobs(rows.map((row) => row.tokenIds));
  let sum = 0;
  let tokens = 0;
  rows.forEach((row, d) => {
    row.lossMask.forEach((m, t) => {
      if (m !== 1) return;
      sum -= logprobs_D_T[d]?.[t] ?? 0;
      tokens += 1;
    });
  });
  return tokens === 0 ? null : sum / tokens;
}

/**
 * Splits rows into training and held-out rows with a seeded shuffle.
 * @param rows - every row
 * @param heldOutFraction - share held out, in [0, 0.5]; at least one row is held out when the share is above 0 and
 *   there are two rows or more
 * @param seed - seed of the split
 * @returns the training rows and the held-out rows, each in the original order
 */
export function splitHeldOut(
  rows: readonly TrainRow[],
  heldOutFraction: number,
  seed: number,
): { train: TrainRow[]; heldOut: TrainRow[] } {
  const count = heldOutFraction > 0 && rows.length >= 2 ? Math.max(1, Math.floor(rows.length * heldOutFraction)) : 0;
  const heldOutIndex = new Set(shuffled(rows.length, mulberry32(seed ^ 0x5f7)).slice(0, count));
  return {
    train: rows.filter((_, i) => !heldOutIndex.has(i)),
    heldOut: rows.filter((_, i) => heldOutIndex.has(i)),
  };
}

/** A Fisher–Yates shuffle of 0..n-1. */
function shuffled(n: number, random: () => number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return order;
}
