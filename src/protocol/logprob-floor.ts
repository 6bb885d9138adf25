/** @module The lowest logprob arclight treats as a sampling-time value: the gateway's capture check and the engines' guard. */

/**
 * Lowest recorded logprob (nats) a train step uses. vLLM writes −9999.0 for a token its sampler gave zero
 * probability (its stand-in for −∞, `vllm/v1/engine/logprobs.py`); such a token has no finite importance ratio, and
 * an old logprob ~88 nats below the current one overflows `exp` in float32. −50 nats (p ≈ 2e−22) lies far below any
 * token a sampler draws in practice (a 150k vocabulary at 1M tokens a step samples a p < 2e−22 token less than once
 * in 10^10 steps), so the floor changes no honestly recorded value. The gateway flags a captured call holding a value
 * below it (`logprobs_below_floor`); the engines floor what still reaches them (`engine/nonfinite-guard.ts`).
 */
export const LOGPROB_FLOOR = -50;
