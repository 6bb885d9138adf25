/**
 * @module Loss normalisation weights: per-rollout-mean row weights (every rollout weighs the same whatever its number
 * of rows and tokens), and truncated importance-sampling weights for rollouts sampled by an older or different policy.
 */
import type { LossAggregation } from "../engine/engine.js";
import { type ScoredRow, type TrainingRow, trainableTokens } from "./training-row.js";

/** The trainer's `loss.aggregation` values. */
export type LossAggregationName = "token-mean" | "per-rollout-mean" | "token-sum-norm";

/**
 * Maps the trainer's loss aggregation to the engine's.
 * @param aggregation - `token-mean`, `per-rollout-mean` or `token-sum-norm`
 * @returns `token-mean`, `weighted` (rows then carry {@link perRolloutMeanWeights}) or `constant` (the update's
 *   denominator is {@link tokenSumNormalizer})
 */
export function engineAggregation(aggregation: LossAggregationName): LossAggregation {
  if (aggregation === "token-sum-norm") return "constant";
  return aggregation === "per-rollout-mean" ? "weighted" : "token-mean";
}

/**
 * Dr. GRPO's constant normaliser for one update: L = Σ_r Σ_{t∈r} ℓ_t / (R · normLength), the mean over the update's
 * R rollouts of each rollout's token sum divided by one fixed length, so a rollout's weight per token does not
 * shrink as it grows (per-rollout-mean's 1/M_r does: the length bias Dr. GRPO removes).
 * @param rolloutIds_D - the rollout of each row of the update, [D]
 * @param normLength - the constant length (tokens), e.g. the longest response allowed
 * @returns R · normLength
 * @throws {RangeError} when `normLength` is not positive
 * @see Liu et al., "Understanding R1-Zero-Like Training: A Critical Perspective", arXiv:2503.20783, §3.2 (Dr. GRPO)
 */
export function tokenSumNormalizer(rolloutIds_D: readonly string[], normLength: number): number {
  if (!(normLength > 0)) throw new RangeError(`normLength must be > 0, got ${normLength}`);
  return new Set(rolloutIds_D).size * normLength;
}

/**
 * Row weights for `per-rollout-mean`: each row's weight is 1 / M_r, where M_r is the number of mask-1 tokens over all
 * rows of its rollout r. With the engine's `weighted` aggregation (see {@link weightedLoss}) the loss is
 * ```
 * L = Σ_i w_i Σ_{t∈mask_i} ℓ_t  /  Σ_i w_i·|mask_i|
 *   = Σ_r (1/M_r) Σ_{t∈r} ℓ_t   /  Σ_r (1/M_r)·M_r
 *   = (1/R) Σ_r mean_{t∈r} ℓ_t                       (R = rollouts in the batch)
 * ```
 * so each rollout contributes its own token mean once: a rollout of 3 rows and 30 tokens (w = 1/30 on each of its
 * tokens) weighs exactly as much as one of 1 row and 5 tokens (w = 1/5). Under `token-mean` the first would weigh 6×.
 * @param rows - every row of the batch, [D]
 * @returns weight of each row, [D]
 */
export function perRolloutMeanWeights(rows: readonly TrainingRow[]): number[] {
  const tokensByRollout = new Map<string, number>();
  for (const row of rows) {
    tokensByRollout.set(row.rolloutId, (tokensByRollout.get(row.rolloutId) ?? 0) + trainableTokens(row));
  }
  return rows.map((row) => {
    const tokens = tokensByRollout.get(row.rolloutId) ?? 0;
    return tokens === 0 ? 0 : 1 / tokens;
  });
}

/**
 * The `weighted` aggregation written out, the contract the engine implements: Σ_i w_i Σ_t m_it ℓ_it / Σ_i w_i Σ_t m_it.
 * The denominator sums each row's weight once per masked token, which makes {@link perRolloutMeanWeights} a mean
 * over rollouts; with every w_i = 1 it is the plain token mean.
 * @param tokenLosses_D_T - per-token loss of each row (nats), ragged [rows, T]
 * @param lossMask_D_T - loss mask of each row, ragged [rows, T]
 * @param weights_D - row weights, [rows]
 * @returns the aggregated loss; 0 when no token is masked
 */
export function weightedLoss(
  tokenLosses_D_T: readonly (readonly number[])[],
  lossMask_D_T: readonly (readonly number[])[],
  weights_D: readonly number[],
): number {
  let numerator = 0;
  let denominator = 0;
  tokenLosses_D_T.forEach((losses, i) => {
    const w = weights_D[i] ?? 0;
    const mask = lossMask_D_T[i] ?? [];
    losses.forEach((loss, t) => {
      const m = mask[t] ?? 0;
      numerator += w * m * loss;
      denominator += w * m;
    });
  });
  return denominator === 0 ? 0 : numerator / denominator;
}

/** Truncated importance-sampling weights of one row and what they saw. */
export interface TisWeights {
  /** min(exp(logp_old − logp_sampler), cap) on mask-1 tokens, 1 elsewhere and where unknown, [R]. */
  isWeights: number[];
  /** Mask-1 tokens without a recorded sampling logprob (weight 1: no correction possible). */
  unknownTokens: number;
  /** Mask-1 tokens whose ratio exceeded the cap. */
  cappedTokens: number;
}

/**
 * Truncated importance-sampling (TIS) weights. The rollout was sampled by the behaviour policy μ (the inference
 * server's weights at sampling time, possibly stale in async mode, and a different numeric implementation in any
 * case), while PPO's ratio is taken against the old policy π_old (the trainer's weights at the start of this step).
 * Each masked token's gradient is therefore scaled by
 * ```
 * w_t = min( π_old(y_t) / μ(y_t), C ) = min( exp(logp_old_t − logp_sampler_t), C )
 * ```
 * where logp_sampler is the logprob recorded at sampling time and logp_old the trainer's recomputed logprob. The ratio
 * is target over behaviour (the direction that makes the estimate unbiased before truncation); the cap C bounds its
 * variance, at the price of a small bias where π_old ≫ μ.
 * @param recorded_R - sampling-time logprobs (nats), [R]; null where not recorded
 * @param proximal_R - the trainer's logprobs of the same tokens under π_old (nats), [R]
 * @param lossMask_R - the row's loss mask, [R]
 * @param cap - C ≥ 1
 * @returns per-token weights and counts
 * @throws {RangeError} when `cap` < 1 or the arrays differ in length
 * @see Yao et al. 2025, "Your Efficient RL Framework Secretly Brings You Off-Policy RL Training" (truncated IS)
 */
export function truncatedIsWeights(
  recorded_R: readonly (number | null)[],
  proximal_R: readonly number[],
  lossMask_R: readonly number[],
  cap: number,
): TisWeights {
  if (!(cap >= 1)) throw new RangeError(`TIS cap must be >= 1, got ${cap}`);
  if (recorded_R.length !== lossMask_R.length || proximal_R.length !== lossMask_R.length) {
    throw new RangeError(
      `TIS arrays differ in length: recorded ${recorded_R.length}, proximal ${proximal_R.length}, mask ${lossMask_R.length}`,
    );
  }
  const result: TisWeights = { isWeights: [], unknownTokens: 0, cappedTokens: 0 };
  lossMask_R.forEach((m, t) => {
    const recorded = recorded_R[t] ?? null;
    let weight = 1;
    if (m === 1 && recorded === null) result.unknownTokens += 1;
    if (m === 1 && recorded !== null) {
      const ratio = Math.exp((proximal_R[t] ?? 0) - recorded);
      if (ratio > cap) result.cappedTokens += 1;
      weight = Math.min(ratio, cap);
    }
    result.isWeights.push(weight);
  });
  return result;
}

/**
 * Switches a scored row to decoupled PPO with TIS: `oldLogprobs` become the trainer's recomputed π_old logprobs (so
 * PPO's ratio is π_θ / π_old) and `isWeights` the truncated π_old / μ weights of {@link truncatedIsWeights}.
 * @param row - a scored row whose `oldLogprobs` are the sampling-time ones
 * @param proximal_R - the trainer's logprobs of the response region under π_old (nats), [R]
 * @param cap - TIS cap C ≥ 1
 * @returns the new row and the TIS counts
 * @throws {RangeError} as {@link truncatedIsWeights}
 */
export function withTruncatedIs(
  row: ScoredRow,
  proximal_R: readonly number[],
  cap: number,
): { row: ScoredRow; unknownTokens: number; cappedTokens: number } {
  const tis = truncatedIsWeights(row.oldLogprobs, proximal_R, row.lossMask, cap);
  return {
    row: { ...row, oldLogprobs: [...proximal_R], isWeights: tis.isWeights },
    unknownTokens: tis.unknownTokens,
    cappedTokens: tis.cappedTokens,
  };
}
