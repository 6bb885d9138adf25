/**
 * @module DAPO's overlong reward shaping: a length-aware penalty added to a rollout's final reward, zero up to a soft
 * limit, growing linearly through a buffer, and the full penalty past the maximum length.
 */

/** `overlong_shaping` settings. */
export interface OverlongShaping {
  /** L_max: tokens a rollout may generate before the full penalty (tokens). */
  maxLength: number;
  /** L_cache: the buffer below L_max over which the penalty grows from 0 (tokens, < maxLength). */
  buffer: number;
  /** Multiplies the penalty (1: DAPO's, from 0 down to −1). */
  factor: number;
}

/**
 * Soft overlong punishment of a rollout that generated `length` tokens:
 * ```
 * R_length(y) = 0                              when |y| ≤ L_max − L_cache
 *             = ((L_max − L_cache) − |y|) / L_cache   when L_max − L_cache < |y| ≤ L_max
 *             = −1                             when |y| > L_max
 * ```
 * times `factor`, added to the rollout's final reward. With L_max 20, L_cache 4: 16 tokens → 0, 18 → −0.5, 21 → −1.
 * @param length - tokens the rollout generated (its trained tokens over all its calls)
 * @param shaping - L_max, L_cache and the factor
 * @returns the penalty, in [−factor, 0]
 * @throws {RangeError} when the buffer is not in [1, maxLength)
 * @see Yu et al., "DAPO: An Open-Source LLM Reinforcement Learning System at Scale", arXiv:2503.14476, §3.4, eq. 13
 */
export function overlongPenalty(length: number, shaping: OverlongShaping): number {
  const { maxLength, buffer, factor } = shaping;
  if (!(buffer >= 1 && buffer < maxLength)) {
    throw new RangeError(`overlong buffer must be in [1, max_length), got ${buffer} with max_length ${maxLength}`);
  }
  const soft = maxLength - buffer;
  if (length <= soft) return 0;
  if (length > maxLength) return -factor;
  return (factor * (soft - length)) / buffer;
}
