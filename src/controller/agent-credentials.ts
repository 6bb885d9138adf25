/** @module The key an agent process gets: an attempt-scoped token expiring with it, never the admin key. */
import { agentTokenExpiry, mintAgentToken } from "../protocol/agent-token.js";
import type { Rollout } from "../protocol/index.js";

/** An agent token (`aglt1.…`) for one attempt, or "" when `adminKey` is empty (an open gateway). */
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
