/** @module The lowest logprob arclight treats as a sampling-time value: the gateway's capture check and the engines' guard. */

/**
 * Lowest recorded logprob (nats) a train step uses: vLLM writes −9999 for a zero-probability token, which overflows
 * `exp` in float32; −50 (p ≈ 2e−22) is below any token a sampler draws in practice.
 */
export const LOGPROB_FLOOR = -50;
