/**
 * @module What a user sees when the agent cannot run: {@link AllRolloutsFailed} (a run whose every rollout so far
 * failed) and {@link describeFailedRollout} (the failed rollout's reason and the last lines of the agent's output).
 */
import type { GatewayClient } from "../gateway/client.js";

/**
 * Thrown by the training loop when every rollout of a step failed and no rollout of the run had succeeded before:
 * the agent cannot run at all (bad command, missing package, unreachable proxy), so training would only spend
 * time. A run whose agent worked earlier keeps going through failed steps (they are counted in `rollouts/failed`).
 */
export class AllRolloutsFailed extends Error {
  /**
   * @param step - the step (0-based) whose rollouts all failed
   * @param rolloutIds - that step's rollouts, launch order
   */
  constructor(
    readonly step: number,
    readonly rolloutIds: readonly string[],
  ) {
    super(`every rollout of step ${step + 1} failed (${rolloutIds.length} rollouts) and none had succeeded before`);
    this.name = "AllRolloutsFailed";
  }
}

/** Lines of the agent's output a report shows, from the end. */
const TAIL_LINES = 12;

/**
 * Describes why a rollout failed, for a terminal: its reason and the last {@link TAIL_LINES} lines of the agent's
 * output (the controller's `log` event); without one, the rollout's `error_message`, and a hint that the agent may not
 * have started when that is what it says (or it says nothing).
 * @param client - gateway client
 * @param rolloutId - a failed rollout
 * @returns multi-line text, no trailing newline; every line after the first is indented by two spaces
 */
export async function describeFailedRollout(client: GatewayClient, rolloutId: string): Promise<string> {
  const [log] = await client.getEvents(rolloutId, { eventType: "log" });
  if (log === undefined) {
    const reason = (await client.getRollout(rolloutId).catch(() => null))?.rollout.status.error_message ?? null;
    // An agent that started and then failed while no controller watched it (the one that ran it stopped or crashed)
    // has a reason but no captured output; one that never started has neither, or "failed to start".
    if (reason !== null && !reason.startsWith("failed to start")) {
      return `rollout ${rolloutId} failed (${reason}); no output of it was recorded`;
    }
    return (
      `rollout ${rolloutId} failed${reason === null ? "" : ` (${reason})`} with no output recorded: the agent ` +
      "command may not have started (see the controller's log line above, e.g. spawn … ENOENT)"
    );
  }
  const data = (log.data ?? {}) as { reason?: unknown; text?: unknown };
  const tail = String(data.text ?? "")
    .trimEnd()
    .split("\n")
    .slice(-TAIL_LINES)
    .join("\n  ");
  return `rollout ${rolloutId} failed (${String(data.reason ?? "failed")}); its last output:\n  ${tail}`;
}

/**
 * The first rollout among `rolloutIds` that ended `failed`, described by {@link describeFailedRollout}; null when
 * none of them is failed (or none can be read).
 * @param client - gateway client
 * @param rolloutIds - candidates, in the order to look at them
 */
export async function describeFirstFailed(
  client: GatewayClient,
  rolloutIds: readonly string[],
): Promise<string | null> {
  for (const rolloutId of rolloutIds) {
    const detail = await client.getRollout(rolloutId).catch(() => null);
    if (detail?.rollout.status.state === "failed") return describeFailedRollout(client, rolloutId);
  }
  return null;
}
