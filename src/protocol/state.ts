/** @module The rollout state machine, in one place: queuing → running | failed; running → succeeded | failed. */
import { InvalidTransition } from "./errors.js";
import type { RolloutState } from "./rollout.js";

/** Allowed moves. Terminal states (`succeeded`, `failed`) have none. A same-state patch is a no-op and allowed. */
const TRANSITIONS: Readonly<Record<RolloutState, readonly RolloutState[]>> = Object.freeze({
  queuing: ["running", "failed"],
  running: ["succeeded", "failed"],
  succeeded: [],
  failed: [],
});

/** True for `succeeded` and `failed`: a rollout in one of them never changes state again. */
export function isTerminal(state: RolloutState): boolean {
  return state === "succeeded" || state === "failed";
}

/** True when `from -> to` is allowed; `from === to` is allowed for non-terminal states (an idempotent patch). */
export function canTransition(from: RolloutState, to: RolloutState): boolean {
  if (from === to) return !isTerminal(from);
  return TRANSITIONS[from].includes(to);
}

/**
 * Throws unless `from -> to` is allowed.
 * @throws {InvalidTransition} when the state machine forbids the move (HTTP 409)
 */
export function assertTransition(rolloutId: string, from: RolloutState, to: RolloutState): void {
  if (!canTransition(from, to)) throw new InvalidTransition(rolloutId, from, to);
}

/**
 * Attempt ids are decimal strings "0", "1", …; the first attempt of every rollout is "0".
 * @returns the id of the attempt after `attemptId`
 * @throws {RangeError} when `attemptId` is not a decimal attempt id
 */
export function nextAttemptId(attemptId: string): string {
  if (!/^\d+$/.test(attemptId)) throw new RangeError(`attempt id ${attemptId} is not a decimal attempt id`);
  return String(Number(attemptId) + 1);
}

/** The attempt id every rollout starts with. */
export const FIRST_ATTEMPT_ID = "0";

/**
 * The attempt a rollout's writes go to: `status.last_attempt_id`, or "0" while it is still null (a rollout no one
 * started yet), as Agent Lightning v1.0 reads it.
 * @param status - the rollout's status (only `last_attempt_id` is read)
 */
export function currentAttemptOf(status: { last_attempt_id: string | null }): string {
  return status.last_attempt_id ?? FIRST_ATTEMPT_ID;
}
