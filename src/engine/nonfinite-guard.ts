/**
 * @module The non-finite guard every engine applies to a train step, as constants and scalar formulas so that any
 * engine (the embedded tfjs one, a PyTorch one) computes exactly the same numbers. Nothing here touches tensors.
 *
 * The guard, in the order a train step applies it:
 *
 * 1. **Floor recorded logprobs.** Each old (sampling-time) and reference logprob at a trained position becomes
 *    `clampRecordedLogprob(x)`: NaN and anything below {@link LOGPROB_FLOOR} become the floor, anything above 0
 *    becomes 0. Positions outside the loss mask are never read (an engine writes 0 there), so garbage in a prompt
 *    position cannot reach the loss through `0 · NaN = NaN`.
 * 2. **Ratios in log space.** With `d = logprob − oldLogprob` (both finite after step 1), the ratio is
 *    `exp(clamp(d, −LOG_RATIO_LIMIT, +LOG_RATIO_LIMIT))`; the k3 KL terms use the same clamped difference
 *    (`k3 = exp(c) − c − 1`, `c = clamp(other − logprob, ±LOG_RATIO_LIMIT)`). The clamp's gradient is 0 outside
 *    the limit (as `torch.clamp`), so a token past the limit adds a constant to the loss and nothing to the gradient.
 * 3. **Skip a non-finite step.** When the summed loss or the global gradient norm (before clipping) is not finite,
 *    no weight and no optimiser state changes (AdamW's step counter included) and the step reports
 *    `nonFiniteSkipped: true`.
 * 4. **Never write a non-finite weight.** The optimiser computes every new weight and moment first and assigns them
 *    only if all are finite; otherwise the step is skipped as in 3.
 *
 * PyTorch equivalent of 1–2 (the same constants):
 * ```python
 * old = torch.nan_to_num(old, nan=FLOOR, neginf=FLOOR, posinf=0.0).clamp(FLOOR, 0.0)
 * ratio = torch.exp(torch.clamp(logprob - old, -LIMIT, LIMIT))
 * ```
 * `test/fixtures/nonfinite-guard.json` lists inputs and the expected outputs of 1–2 for a port to test against.
 */
import { LOGPROB_FLOOR } from "../protocol/logprob-floor.js";

/**
 * Lowest recorded logprob (nats) a train step uses (defined in `protocol/logprob-floor.ts`, which the gateway's
 * capture check shares); together with {@link LOG_RATIO_LIMIT} it keeps every ratio finite.
 */
export { LOGPROB_FLOOR };

/**
 * Largest |log ratio| (nats) before `exp`: ratios lie in [e^−20, e^20] ≈ [2e−9, 4.9e8], finite in float32 with room
 * for sums over millions of tokens. The same limit as verl's `compute_policy_loss` (`torch.clamp(negative_approx_kl,
 * min=-20.0, max=20.0)`), far outside any PPO clip range, so it changes only tokens PPO would clip anyway.
 * @see verl, `verl/trainer/ppo/core_algos.py`, `compute_policy_loss`
 */
export const LOG_RATIO_LIMIT = 20;

/**
 * A recorded logprob as a train step uses it (step 1 of the guard).
 * @param logprob - a recorded logprob (nats); any number, NaN and ±Infinity included
 * @returns the value clamped into [{@link LOGPROB_FLOOR}, 0]; NaN → the floor
 */
export function clampRecordedLogprob(logprob: number): number {
  if (Number.isNaN(logprob) || logprob < LOGPROB_FLOOR) return LOGPROB_FLOOR;
  return Math.min(logprob, 0);
}

/**
 * Log ratio as the loss uses it (step 2 of the guard).
 * @param logprob - current-policy logprob (nats), finite
 * @param oldLogprob - recorded logprob after {@link clampRecordedLogprob} (nats)
 * @returns `clamp(logprob − oldLogprob, −LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)`
 */
export function clampedLogRatio(logprob: number, oldLogprob: number): number {
  return Math.min(LOG_RATIO_LIMIT, Math.max(-LOG_RATIO_LIMIT, logprob - oldLogprob));
}

/**
 * True when a recorded logprob is below the floor or not a number, i.e. the guard would change it (for counting).
 * @param logprob - a recorded logprob (nats)
 */
export function isBelowFloor(logprob: number): boolean {
  return Number.isNaN(logprob) || logprob < LOGPROB_FLOOR;
}
