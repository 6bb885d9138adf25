/** @module How an attempt ended, reported as a `log` event on failure then a status patch; both safe to repeat. */
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

/** The outcome of an exited process; the controller's own kill `cause` wins over the exit status. */
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

/** Answers meaning this attempt's write no longer applies (deleted, finished, moved on): dropped, never retried. */
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
 * Writes the `log` event (while the rollout still takes events), then the patch; the event id is fixed per attempt,
 * so a repeated report stores it once.
 * @returns `superseded` when the gateway no longer lets this attempt end
 * @throws whatever else the client throws: report again later
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
