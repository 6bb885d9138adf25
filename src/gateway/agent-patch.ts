/**
 * @module The attempt rule of a rollout PATCH sent with an agent token: the token's attempt must be the rollout's
 * current attempt (a late report from a superseded attempt's helper process must never finish or fail the live one),
 * and the patch may not move the rollout to another attempt. The admin key's patches keep AGL's rules unchanged.
 */
import type { AgentTokenClaims } from "../protocol/agent-token.js";
import { currentAttemptOf, Forbidden, RolloutNotFound, type RolloutPatch, StaleAttempt } from "../protocol/index.js";
import type { Store } from "../store/store.js";

/**
 * Checks an agent's patch and pins it to the token's attempt.
 * 1. `last_attempt_id`, when given, must be the token's attempt (403 otherwise).
 * 2. The token's attempt must be the rollout's current attempt now (409 `StaleAttempt` otherwise).
 * 3. The returned patch names the token's attempt as `last_attempt_id`, so the store's own check refuses it
 *    atomically should a retry supersede the attempt between this check and the write.
 * @param store - where the rollout is read
 * @param claims - the agent token's claims (its rollout is `rolloutId`: the access hook checked it)
 * @param rolloutId - the rollout being patched
 * @param patch - the parsed patch
 * @returns the patch to apply
 * @throws {Forbidden} the patch names another attempt
 * @throws {RolloutNotFound} no such rollout
 * @throws {StaleAttempt} the token's attempt is not the current one
 */
export async function pinAgentPatch(
  store: Store,
  claims: AgentTokenClaims,
  rolloutId: string,
  patch: RolloutPatch,
): Promise<RolloutPatch> {
  const named = patch.status?.last_attempt_id;
  if (named !== undefined && named !== claims.attempt_id) {
    throw new Forbidden(
      `This agent token is for attempt ${claims.attempt_id}; it may not set last_attempt_id ${named}`,
    );
  }
  const rollout = await store.getRollout(rolloutId);
  if (!rollout) throw new RolloutNotFound(rolloutId);
  const current = currentAttemptOf(rollout.status);
  if (current !== claims.attempt_id) throw new StaleAttempt(rolloutId, claims.attempt_id, current);
  return { ...patch, status: { ...patch.status, last_attempt_id: claims.attempt_id } };
}
