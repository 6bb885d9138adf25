/**
 * @module Sampler–trainer mismatch correction: when the sampler is not the trainer (vLLM, a frozen or stale copy),
 * the trainer recomputes π_old and weights each trained token by the ratio π_old / μ of its own logprob to the
 * sampler's — truncated (token or sequence level) and/or masked (tokens or rows whose ratio leaves a band dropped) —
 * and reports how far the two policies were apart. Both engines receive the result as per-token `isWeights`, so one
 * formula serves the embedded and the PyTorch engine.
 * @see Yao et al. 2025, "Your Efficient RL Framework Secretly Brings You Off-Policy RL Training" (token TIS);
 *   verl `rollout_corr` and slime TIS/MIS (sequence-level IS, masked IS with a ratio band)
 */
import type { StepBatch } from "./batch.js";
import { toEngineRow } from "./training-row.js";

/** How a step corrects the mismatch (`mismatch` section of the trainer config, plus `loss.tis_cap`). */
export interface MismatchSettings {
  /** `token`: w_t = min(r_t, cap); `sequence`: every token of a row gets min(Π r_t, cap); `none`: w = 1. */
  isLevel: "token" | "sequence" | "none";
  /** Truncation cap C ≥ 1. */
  isCap: number;
  /** `token`: drop tokens with r_t outside [low, high]; `sequence`: drop rows whose geometric-mean ratio is outside. */
  maskLevel: "none" | "token" | "sequence";
  maskLow: number;
  maskHigh: number;
}

/** The weights of one row and what they saw. */
export interface RowCorrection {
  /** Per-token weight, [R]: 1 off the mask and where the sampler's logprob is unknown, 0 where masked. */
  isWeights: number[];
  /** log r_t = logp_old − logp_sampler of each mask-1 token with a known sampler logprob, in order. */
  logRatios: number[];
  unknownTokens: number;
  cappedTokens: number;
  maskedTokens: number;
  rowMasked: boolean;
}

/**
 * The mismatch weights of one row. With r_t = exp(logp_old_t − logp_sampler_t) on mask-1 tokens whose sampler logprob
 * is known:
 * 1. importance weight: token level w_t = min(r_t, C); sequence level w_t = min(exp(Σ_t log r_t), C) for every such
 *    token of the row; none: w_t = 1;
 * 2. masking: token level sets w_t = 0 where r_t ∉ [low, high]; sequence level sets every weight of the row to 0 when
 *    the geometric mean exp(mean_t log r_t) ∉ [low, high].
 * Tokens with an unknown sampler logprob keep weight 1 (no correction possible) and are left out of both.
 * @param recorded_R - sampler logprobs (nats), null where not recorded, [R]
 * @param proximal_R - the trainer's π_old logprobs of the same tokens (nats), [R]
 * @param lossMask_R - the row's loss mask, [R]
 * @example ratios 0.5 and 4 (log −0.693, 1.386), cap 2, token IS, token mask [0.6, 3] → weights [0, 0]; sequence IS,
 *   no mask → both min(exp(0.693), 2) = 2; sequence mask [0.6, 3] → geometric mean √2 inside, kept
 * @throws {RangeError} when the arrays differ in length, the cap is < 1 or the band is empty
 */
export function correctRow(
  recorded_R: readonly (number | null)[],
  proximal_R: readonly number[],
  lossMask_R: readonly number[],
  settings: MismatchSettings,
): RowCorrection {
  checkSettings(settings);
  if (recorded_R.length !== lossMask_R.length || proximal_R.length !== lossMask_R.length) {
    throw new RangeError(
      `mismatch arrays differ in length: recorded ${recorded_R.length}, proximal ${proximal_R.length}, mask ${lossMask_R.length}`,
    );
  }
  const out: RowCorrection = {
    isWeights: lossMask_R.map(() => 1),
    logRatios: [],
    unknownTokens: 0,
    cappedTokens: 0,
    maskedTokens: 0,
    rowMasked: false,
  };
  const known: number[] = [];
  lossMask_R.forEach((m, t) => {
    if (m !== 1) return;
    const recorded = recorded_R[t] ?? null;
    if (recorded === null) out.unknownTokens += 1;
    else {
      known.push(t);
      out.logRatios.push((proximal_R[t] ?? 0) - recorded);
    }
  });
  applyImportance(out, known, settings);
  applyMask(out, known, settings);
  return out;
}

function checkSettings(s: MismatchSettings): void {
  if (!(s.isCap >= 1)) throw new RangeError(`IS cap must be >= 1, got ${s.isCap}`);
  if (!(s.maskLow > 0 && s.maskLow <= 1 && s.maskHigh >= 1)) {
    throw new RangeError(`mask band must satisfy 0 < low <= 1 <= high, got [${s.maskLow}, ${s.maskHigh}]`);
  }
}

function applyImportance(out: RowCorrection, known: readonly number[], s: MismatchSettings): void {
  if (s.isLevel === "none" || known.length === 0) return;
  if (s.isLevel === "token") {
    known.forEach((t, k) => {
      const ratio = Math.exp(out.logRatios[k]!);
      if (ratio > s.isCap) out.cappedTokens += 1;
      out.isWeights[t] = Math.min(ratio, s.isCap);
    });
    return;
  }
  const ratio = Math.exp(out.logRatios.reduce((a, b) => a + b, 0));
  if (ratio > s.isCap) out.cappedTokens += known.length;
  for (const t of known) out.isWeights[t] = Math.min(ratio, s.isCap);
}

function applyMask(out: RowCorrection, known: readonly number[], s: MismatchSettings): void {
  const outside = (logRatio: number) => {
    const ratio = Math.exp(logRatio);
    return ratio < s.maskLow || ratio > s.maskHigh;
  };
  if (s.maskLevel === "token") {
    known.forEach((t, k) => {
      if (!outside(out.logRatios[k]!)) return;
      out.isWeights[t] = 0;
      out.maskedTokens += 1;
    });
  } else if (s.maskLevel === "sequence" && known.length > 0) {
    const meanLog = out.logRatios.reduce((a, b) => a + b, 0) / known.length;
    if (!outside(meanLog)) return;
    out.rowMasked = true;
    out.maskedTokens = known.length;
    for (const t of known) out.isWeights[t] = 0;
  }
}

/** One step's mismatch metrics (null where no token had both logprobs). */
export interface MismatchStats {
  /** Mean k3 estimate of KL(μ ‖ π_old): r − 1 − log r, over tokens with both logprobs (nats per token). */
  kl: number | null;
  ratioP05: number | null;
  ratioP50: number | null;
  ratioP95: number | null;
  /** Share of those tokens given weight 0 by masking (token or whole row). */
  maskedFraction: number | null;
  maskedRows: number;
  cappedTokens: number;
  unknownTokens: number;
}

/** The q-quantile (linear interpolation between order statistics, as numpy's default) of sorted values. */
function quantile(sorted: readonly number[], q: number): number {
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const high = Math.ceil(at);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}

/**
 * The step's metrics from its rows' corrections.
 * @param rows - every row's {@link correctRow} result
 */
export function mismatchStats(rows: readonly RowCorrection[]): MismatchStats {
  const logRatios = rows.flatMap((row) => row.logRatios);
  const sum = (f: (row: RowCorrection) => number) => rows.reduce((a, row) => a + f(row), 0);
  const base = {
    maskedRows: sum((row) => (row.rowMasked ? 1 : 0)),
    cappedTokens: sum((row) => row.cappedTokens),
    unknownTokens: sum((row) => row.unknownTokens),
  };
  if (logRatios.length === 0) {
    return { kl: null, ratioP05: null, ratioP50: null, ratioP95: null, maskedFraction: null, ...base };
  }
  const ratios = logRatios.map(Math.exp).sort((a, b) => a - b);
  const kl = logRatios.reduce((a, l) => a + (Math.exp(l) - 1 - l), 0) / logRatios.length;
  return {
    kl,
    ratioP05: quantile(ratios, 0.05),
    ratioP50: quantile(ratios, 0.5),
    ratioP95: quantile(ratios, 0.95),
    maskedFraction: sum((row) => row.maskedTokens) / logRatios.length,
    ...base,
  };
}

/** A step batch with the mismatch correction applied, and its metrics. */
export interface CorrectedBatch {
  batch: StepBatch;
  stats: MismatchStats;
}

/**
 * Applies the correction to a batch: each row's old logprobs become the trainer's π_old logprobs (PPO's ratio is then
 * π_θ / π_old) and its tokens carry the {@link correctRow} weights.
 * @param batch - a batch whose old logprobs are still the sampler's
 * @param logprobs_D_T - `engine.logprobs(batch.engineRows.map((r) => r.tokenIds))` under the weights at step start,
 *   ragged [rows, T] aligned with each engine row's `tokenIds` (nats)
 * @throws {RangeError} when the logprobs do not have one row of the right length per batch row, or for bad settings
 */
export function withMismatchCorrection(
  batch: StepBatch,
  logprobs_D_T: readonly (readonly number[])[],
  settings: MismatchSettings,
): CorrectedBatch {
  if (logprobs_D_T.length !== batch.rows.length) {
    throw new RangeError(`mismatch: got logprobs for ${logprobs_D_T.length} rows, the batch has ${batch.rows.length}`);
  }
  const corrections: RowCorrection[] = [];
  const rows = batch.rows.map((row, i) => {
    const full = logprobs_D_T[i] ?? [];
    const promptLen = row.promptTokenIds.length;
    if (full.length !== promptLen + row.responseTokenIds.length) {
      throw new RangeError(
        `mismatch: row ${i} has ${promptLen + row.responseTokenIds.length} tokens, got ${full.length} logprobs`,
      );
    }
    const proximal_R = full.slice(promptLen);
    const correction = correctRow(row.oldLogprobs, proximal_R, row.lossMask, settings);
    corrections.push(correction);
    return { ...row, oldLogprobs: [...proximal_R], isWeights: correction.isWeights };
  });
  return { batch: { ...batch, rows, engineRows: rows.map(toEngineRow) }, stats: mismatchStats(corrections) };
}

/**
 * The correction a trainer config asks for.
 * @param config - `mismatch` section and `loss.tis_cap`
 */
export function mismatchSettingsOf(config: {
  mismatch: {
    is_level: MismatchSettings["isLevel"];
    mask_level: MismatchSettings["maskLevel"];
    mask_low: number;
    mask_high: number;
  };
  loss: { tis_cap: number };
}): MismatchSettings {
  const { mismatch, loss } = config;
  return {
    isLevel: mismatch.is_level,
    isCap: loss.tis_cap,
    maskLevel: mismatch.mask_level,
    maskLow: mismatch.mask_low,
    maskHigh: mismatch.mask_high,
  };
}
