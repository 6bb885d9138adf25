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

/** @throws {InvalidTransition} unless the state machine allows `from -> to` */
export function assertTransition(rolloutId: string, from: RolloutState, to: RolloutState): void {
  if (!canTransition(from, to)) throw new InvalidTransition(rolloutId, from, to);
}

/** The attempt id after `attemptId` ("0", "1", …). @throws {RangeError} on a non-decimal id */
export function nextAttemptId(attemptId: string): string {
  if (!/^\d+$/.test(attemptId)) throw new RangeError(`attempt id ${attemptId} is not a decimal attempt id`);
  return String(Number(attemptId) + 1);
}

/** The attempt id every rollout starts with. */
export const FIRST_ATTEMPT_ID = "0";

/** The attempt a rollout's writes go to: `last_attempt_id`, or "0" while null (AGL v1.0). */
export function currentAttemptOf(status: { last_attempt_id: string | null }): string {
  return status.last_attempt_id ?? FIRST_ATTEMPT_ID;
}
