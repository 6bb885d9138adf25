/** @module Ragged rows to right-padded micro-batches aligned with next-token targets; padding has mask 0. */
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

/** @throws {RangeError} naming the row and field, also when per-token arrays are given for some rows only */
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

/** @throws {RangeError} naming the field of row `index` that is wrong for its tokens or the loss */
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

/** Σ mask·weight over a whole step (or the constant `normalizer`): the denominator that makes micro-batches add up. */
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
 * Packs rows into one micro-batch. Values are read only where the mask is set and recorded logprobs are clamped
 * (`nonfinite-guard.ts` step 1), so a NaN or −9999 cannot reach the loss unbounded.
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
