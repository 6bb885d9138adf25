/**
 * @module Turns ragged `TrainRow`s into right-padded micro-batch arrays aligned with next-token targets: the value
 * for input position t of a row is the row's value at token t + 1 (the token being predicted), and padding gets
 * mask 0 so it never counts.
 */
import type { LossConfig, TrainRow } from "../engine.js";
import { clampRecordedLogprob } from "../nonfinite-guard.js";
import { packRows } from "./logprob.js";

/** Flat [rows × width] arrays of one micro-batch. */
export interface PackedBatch {
  rows: number;
  width: number;
  /** int32 [rows, width] model inputs. */
  inputs: Int32Array;
  /** int32 [rows × width] target ids. */
  targets: Int32Array;
  mask: Float32Array;
  weights: Float32Array;
  advantages: Float32Array;
  /** Null when no row has old logprobs. */
  oldLogprobs: Float32Array | null;
  refLogprobs: Float32Array | null;
  isWeights: Float32Array | null;
}

/**
 * Checks every row, and that optional per-token arrays are given for all rows or none.
 * @param rows - the step's rows (at least one)
 * @param maxLength - longest allowed row (tokens)
 * @param vocab - ids allowed: 0..vocab−1
 * @param loss - loss config
 * @throws {RangeError} naming the row and field that is wrong
 */
export function checkRows(rows: TrainRow[], maxLength: number, vocab: number, loss: LossConfig): void {
  if (rows.length === 0) throw new RangeError("trainStep needs at least one row");
  if (loss.aggregation === "constant" && !(loss.kind === "ppo" && (loss.normalizer ?? 0) > 0))
    throw new RangeError("constant aggregation needs a PPO-kind loss with normalizer > 0");
  for (const [i, row] of rows.entries()) {
    checkRow(row, i, maxLength, loss);
    const id = row.tokenIds.find((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
    if (id !== undefined)
      throw new RangeError(`train row ${i}: token id ${id} is outside the vocabulary [0, ${vocab})`);
  }
  for (const field of ["oldLogprobs", "refLogprobs", "isWeights"] as const) {
    const given = rows.filter((r) => r[field] !== undefined).length;
    if (given !== 0 && given !== rows.length)
      throw new RangeError(`train rows: ${field} given for ${given} of ${rows.length} rows (all or none)`);
  }
}

/**
 * Checks one row's arrays against its token ids and the loss's needs.
 * @param row - the row
 * @param index - its position in the step (for messages)
 * @param maxLength - longest allowed row (tokens)
 * @param loss - loss config (KL needs refLogprobs; weighted needs weight)
 * @throws {RangeError} naming the row and field that is wrong
 */
function checkRow(row: TrainRow, index: number, maxLength: number, loss: LossConfig): void {
  const n = row.tokenIds.length;
  if (n < 2 || n > maxLength) throw new RangeError(`train row ${index}: ${n} tokens, expected 2..${maxLength}`);
  const fields = ["lossMask", "advantages", "oldLogprobs", "refLogprobs", "isWeights"] as const;
  for (const field of fields) {
    const values = row[field];
    if (values !== undefined && values.length !== n)
      throw new RangeError(`train row ${index}: ${field} has ${values.length} values for ${n} tokens`);
  }
  if (loss.kind === "ppo" && loss.klCoef > 0 && row.refLogprobs === undefined)
    throw new RangeError(`train row ${index}: refLogprobs are required when klCoef > 0`);
  if (loss.aggregation === "weighted" && (row.weight === undefined || !(row.weight >= 0)))
    throw new RangeError(`train row ${index}: weight (>= 0) is required for weighted aggregation`);
}

/**
 * Σ mask·weight over a whole step: the loss denominator that makes micro-batch gradients add up exactly.
 * @param rows - every row of the step
 * @param loss - aggregation kind
 * @returns masked tokens (token-mean), their summed row weights (weighted), or the loss's `normalizer` (constant)
 */
export function lossDenominator(rows: TrainRow[], loss: LossConfig): number {
  if (loss.aggregation === "constant") return loss.kind === "ppo" ? (loss.normalizer ?? 0) : 0;
  let total = 0;
  for (const row of rows) {
    const weight = loss.aggregation === "weighted" ? row.weight! : 1;
    for (let t = 1; t < row.tokenIds.length; t++) total += (row.lossMask[t] ?? 0) * weight;
  }
  return total;
}

/**
 * Packs rows into one micro-batch. Per-token values are read only where the loss mask is set (elsewhere advantages,
 * old and reference logprobs are 0 and IS weights 1), and recorded logprobs pass through `clampRecordedLogprob`
 * (step 1 of the non-finite guard), so a NaN or −9999 anywhere in a row cannot reach the loss unbounded.
 * @param rows - validated rows
 * @param loss - decides row weights
 * @returns flat arrays, [rows × width] each
 */
export function packBatch(rows: TrainRow[], loss: LossConfig): PackedBatch {
  const { inputs, targets, width } = packRows(rows.map((r) => r.tokenIds));
  const size = rows.length * width;
  const mask = new Float32Array(size);
  const weights = new Float32Array(size);
  const advantages = new Float32Array(size);
  const oldLogprobs = rows.some((r) => r.oldLogprobs) ? new Float32Array(size) : null;
  const refLogprobs = rows.some((r) => r.refLogprobs) ? new Float32Array(size) : null;
  const isWeights = rows.some((r) => r.isWeights) ? new Float32Array(size).fill(1) : null;
  rows.forEach((row, b) => {
    const weight = loss.aggregation === "weighted" ? row.weight! : 1;
    for (let t = 0; t + 1 < row.tokenIds.length; t++) {
      const i = b * width + t;
      mask[i] = row.lossMask[t + 1] ?? 0;
      weights[i] = weight;
      if (mask[i] === 0) continue;
      advantages[i] = row.advantages[t + 1] ?? 0;
      if (oldLogprobs && row.oldLogprobs) oldLogprobs[i] = clampRecordedLogprob(row.oldLogprobs[t + 1]!);
      if (refLogprobs && row.refLogprobs) refLogprobs[i] = clampRecordedLogprob(row.refLogprobs[t + 1]!);
      if (isWeights && row.isWeights) isWeights[i] = row.isWeights[t + 1]!;
    }
  });
  return { rows: rows.length, width, inputs, targets, mask, weights, advantages, oldLogprobs, refLogprobs, isWeights };
}
