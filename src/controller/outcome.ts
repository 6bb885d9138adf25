/**
 * @module How an attempt ended, and reporting it to the gateway: a `log` event with the output tail on failure, then
 * the status patch (`succeeded`, or `failed` with a reason). Both writes are safe to repeat.
 */
import type { GatewayClient } from "../gateway/client.js";
import { Conflict, InvalidTransition, RolloutFinished, RolloutNotFound, StaleAttempt } from "../protocol/index.js";
import type { ExitInfo } from "./local.js";

/** The end of one attempt, waiting to be reported. */
export interface AttemptOutcome {
  rolloutId: string;
  attemptId: string;
  state: "succeeded" | "failed";
  /** `error_message` of a failure, e.g. "exited with code 3". */
  reason: string | null;
  /** `data` of the failure's `log` event (the agent's output tail); absent when no process ran. */
  log?: Record<string, unknown>;
}

/** Why the controller itself ended a process, when it did. */
export type KillCause = "timeout" | "shutdown" | "lost" | null;

/**
 * Names the outcome of an exited process.
 * @param info - exit code / signal / spawn error
 * @param cause - why the controller killed it, if it did (wins over the exit status)
 * @param timeoutSeconds - the rollout's timeout, for "timed out after N s"
 * @returns `succeeded` with no reason, or `failed` with "timed out after N s", "controller shutdown",
 *   "failed to start: …", "exited with code N" or "killed by SIGNAL"
 */
export function describeExit(
  info: ExitInfo,
  cause: KillCause,
  timeoutSeconds: number,
): { state: "succeeded" | "failed"; reason: string | null } {
  if (cause === "timeout") return { state: "failed", reason: `timed out after ${timeoutSeconds} s` };
  if (cause === "shutdown") return { state: "failed", reason: "controller shutdown" };
  if (cause === "lost") return { state: "failed", reason: "controller lost the process" };
  if (info.spawnError !== undefined) return { state: "failed", reason: `failed to start: ${info.spawnError.message}` };
  if (info.code === 0) return { state: "succeeded", reason: null };
  if (info.code !== null) return { state: "failed", reason: `exited with code ${info.code}` };
  return { state: "failed", reason: `killed by ${info.signal ?? "unknown signal"}` };
}

/**
 * True for the gateway answers that mean "this attempt's write no longer applies": the rollout was deleted, finished
 * (`RolloutFinished`, e.g. a repeated report whose first patch landed), moved to another attempt (`StaleAttempt`,
 * `Conflict`), or forbids the move (`InvalidTransition`). Such an outcome is dropped, never retried.
 */
export function isSuperseded(err: unknown): err is Error {
  return (
    err instanceof InvalidTransition ||
    err instanceof StaleAttempt ||
    err instanceof RolloutNotFound ||
    err instanceof RolloutFinished ||
    err instanceof Conflict
  );
}

/** What {@link reportOutcome} did. */
export type ReportResult = "reported" | "superseded";

/**
 * Writes an outcome to the gateway: the `log` event first (while the attempt is current and the rollout not yet
 * terminal: a terminal rollout takes no new events), then the patch. The log event's `event_id` is fixed per attempt,
 * so a repeated report stores it once (the gateway answers a replayed `event_id` even after the rollout finished).
 * @returns `superseded` when the gateway no longer lets this attempt end (the rollout was deleted, finished or moved
 *   to another attempt elsewhere): the outcome is dropped, nothing else to do
 * @throws whatever else the client throws (e.g. `GatewayUnreachable`): report again later
 */
export async function reportOutcome(client: GatewayClient, outcome: AttemptOutcome): Promise<ReportResult> {
  const { rolloutId, attemptId } = outcome;
  try {
    if (outcome.log !== undefined) {
      const eventId = `controller-exit-log-${attemptId}`;
      await client.postEvent(rolloutId, attemptId, { event_type: "log", event_id: eventId, data: outcome.log });
    }
    await client.patchRollout(rolloutId, {
      status: { state: outcome.state, last_attempt_id: attemptId, error_message: outcome.reason },
    });
    return "reported";
  } catch (err) {
    if (isSuperseded(err)) {
      return "superseded";
    }
    throw err;
  }
}
