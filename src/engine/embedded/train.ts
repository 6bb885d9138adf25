/** @module One optimiser step: micro-batched gradients (wasm's 4 GiB cap), global-norm clipping, one AdamW update. */
import * as tf from "@tensorflow/tfjs";
import type { LossConfig, OptimizerConfig, TrainMetrics, TrainRow } from "../engine.js";
import { type AdamW, type AdamWParam, clipGlobalNorm } from "./adamw.js";
import { pickLogprobs, rowEntropy } from "./logprob.js";
import { type LossParts, microBatchLoss } from "./loss.js";
import type { Gpt } from "./model.js";
import { checkRows, lossDenominator, type PackedBatch, packBatch } from "./train-batch.js";

/** Masked sums of one micro-batch, or of several added up. */
export interface MicroSums {
  loss: number;
  entropy: number;
  clipped: number;
  approxKl: number;
  tokens: number;
}

/** Gradients by weight name and the masked sums of the rows they came from. */
export interface GradientSums {
  grads: Map<string, tf.Tensor>;
  sums: MicroSums;
}

/**
 * One training step in place; a non-finite loss, norm or weight changes nothing and reports `nonFiniteSkipped`.
 * @throws {RangeError} for malformed rows or a step without any masked token
 */
export function trainStep(
  model: Gpt,
  optimizer: AdamW,
  rows: TrainRow[],
  loss: LossConfig,
  settings: OptimizerConfig,
): TrainMetrics {
  const denominator = stepDenominator(model, rows, loss);
  const sums = gradientSums(model, rows, loss, denominator, settings.microBatchSize);
  return applyGradients(model, optimizer, sums, settings);
}

/** Checks rows and returns the step's loss denominator. @throws {RangeError} */
export function stepDenominator(model: Gpt, rows: TrainRow[], loss: LossConfig): number {
  checkRows(rows, model.config.context, model.config.vocab, loss);
  const denominator = lossDenominator(rows, loss);
  if (!(denominator > 0)) throw new RangeError("trainStep: no masked token carries weight (Σ lossMask·weight is 0)");
  return denominator;
}

/**
 * Gradient sums over `rows` in micro-batches; each row's loss is divided by the whole step's `denominator`, so
 * disjoint shares add up to the step's gradient (`parallel-train.ts`). The caller disposes the gradients.
 */
export function gradientSums(
  model: Gpt,
  rows: TrainRow[],
  loss: LossConfig,
  denominator: number,
  microBatchSize: number,
): GradientSums {
  const params = trainableParams(model);
  const grads = new Map<string, tf.Tensor>();
  const sums = emptySums();
  const size = Math.max(1, microBatchSize);
  for (let start = 0; start < rows.length; start += size) {
    const batch = packBatch(rows.slice(start, start + size), loss);
    addSums(sums, accumulate(model, params, batch, loss, denominator, grads));
  }
  return { grads, sums };
}

/** Masked sums of nothing. */
function emptySums(): MicroSums {
  return { loss: 0, entropy: 0, clipped: 0, approxKl: 0, tokens: 0 };
}

/** Adds `more` into `into`, field by field. */
export function addSums(into: MicroSums, more: MicroSums): void {
  for (const key of Object.keys(into) as (keyof MicroSums)[]) into[key] += more[key];
}

/** Clips, applies one AdamW update unless the non-finite guard refuses it (steps 3–4), disposes the gradients. */
export function applyGradients(
  model: Gpt,
  optimizer: AdamW,
  step: GradientSums,
  settings: OptimizerConfig,
): TrainMetrics {
  const { grads, sums } = step;
  const gradNorm = clipGlobalNorm(grads, settings.maxGradNorm);
  // Steps 3 and 4 of the non-finite guard: no update from a non-finite loss or gradient, no non-finite weight.
  const finite = Number.isFinite(sums.loss) && Number.isFinite(gradNorm);
  const applied = finite && optimizer.apply(trainableParams(model), grads, settings.learningRate, settings.weightDecay);
  for (const g of grads.values()) g.dispose();
  const tokens = sums.tokens;
  return {
    ...(applied ? {} : { nonFiniteSkipped: true }),
    loss: sums.loss,
    gradNorm,
    entropy: sums.entropy / tokens,
    clipFraction: sums.clipped / tokens,
    approxKl: sums.approxKl / tokens,
    tokens,
  };
}

/** Weights with their decay flag: rank >= 2 (matrices, embeddings) decay; biases and norm gains do not. */
export function trainableParams(model: Gpt): AdamWParam[] {
  return [...model.byName].map(([name, variable]) => ({ name, variable, decay: variable.rank >= 2 }));
}

/** A micro-batch's loss share with the masked entropy sum (scalars). */
export interface BatchObjective extends LossParts {
  /** Σ over masked tokens of the policy's entropy (nats). */
  entropySum: tf.Scalar;
}

/** Differentiable loss share of one packed micro-batch; call inside a tfjs scope. */
export function batchObjective(model: Gpt, batch: PackedBatch, loss: LossConfig, denominator: number): BatchObjective {
  const { logits } = model.forward(tf.tensor2d(batch.inputs, [batch.rows, batch.width], "int32"));
  const logSoftmax = tf.logSoftmax(logits); // [N, V]
  const logprobs = pickLogprobs(logSoftmax, tf.tensor1d(batch.targets, "int32"));
  const mask = tf.tensor1d(batch.mask);
  const optional = (values: Float32Array | null): tf.Tensor1D | null => (values ? tf.tensor1d(values) : null);
  const parts = microBatchLoss(
    {
      logprobs,
      mask,
      weights: tf.tensor1d(batch.weights),
      advantages: tf.tensor1d(batch.advantages),
      oldLogprobs: optional(batch.oldLogprobs),
      refLogprobs: optional(batch.refLogprobs),
      isWeights: optional(batch.isWeights),
      rowWidth: batch.width,
    },
    loss,
    denominator,
  );
  return { ...parts, entropySum: tf.sum(tf.mul(rowEntropy(logSoftmax), mask)) as tf.Scalar };
}

/** Forward + backward of one micro-batch; adds its gradients into `grads` (by weight name). */
function accumulate(
  model: Gpt,
  params: AdamWParam[],
  batch: PackedBatch,
  loss: LossConfig,
  denominator: number,
  grads: Map<string, tf.Tensor>,
): MicroSums {
  let metrics: tf.Scalar[] = [];
  const { value, grads: micro } = tf.variableGrads(
    () => {
      const objective = batchObjective(model, batch, loss, denominator);
      metrics = [objective.entropySum, objective.clippedTokens, objective.approxKlSum].map((t) => tf.keep(t));
      return objective.loss;
    },
    params.map((p) => p.variable),
  );
  for (const { name, variable } of params) {
    const g = micro[variable.name];
    if (!g) continue;
    const previous = grads.get(name);
    grads.set(name, previous ? tf.add(previous, g) : g);
    if (previous) tf.dispose([previous, g]);
  }
  const [entropy, clipped, approxKl] = metrics.map((t) => t.dataSync()[0]!) as [number, number, number];
  const lossValue = value.dataSync()[0]!;
  tf.dispose([value, ...metrics]);
  const tokens = batch.mask.reduce((a, b) => a + b, 0);
  return { loss: lossValue, entropy, clipped, approxKl, tokens };
}
