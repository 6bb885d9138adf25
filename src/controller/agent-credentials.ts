/**
 * @module The key a controller gives an agent process (`AGL_KEY`, the OpenAI/Anthropic API keys, the OTLP header): an
 * agent token scoped to the rollout's attempt and mode, expiring with the attempt's timeout, never the admin key.
 * Shared by every controller (local processes, Kubernetes Jobs).
 */
import { agentTokenExpiry, mintAgentToken } from "../protocol/agent-token.js";
import type { Rollout } from "../protocol/index.js";

/**
 * The key for one attempt's agent.
 * @param adminKey - the controller's gateway key; empty (an open gateway) gives the agent no key
 * @param rollout - the rollout being run (its id, train/val mode and `config.timeout_seconds`)
 * @param attemptId - the attempt being run
 * @param nowSeconds - the current time, epoch seconds (default: now)
 * @returns an agent token (`aglt1.…`), or "" when `adminKey` is empty
 */
export function agentKeyFor(
  adminKey: string,
  rollout: Rollout,
  attemptId: string,
  nowSeconds: number = Date.now() / 1000,
): string {
  if (adminKey === "") return "";
  return mintAgentToken(adminKey, {
    rollout_id: rollout.rollout_id,
    attempt_id: attemptId,
    mode: rollout.is_train ? "train" : "val",
    exp: agentTokenExpiry(rollout.config.timeout_seconds, nowSeconds),
  });
}
