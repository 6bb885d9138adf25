/**
 * @module Pure rules every store applies the same way: building a new rollout, applying a status patch (transition
 * check, attempt retry, version bump) and checking which attempt a write may target (terminal rollouts take none).
 */
import { randomUUID } from "node:crypto";
import {
  assertTransition,
  Conflict,
  FIRST_ATTEMPT_ID,
  isTerminal,
  nextAttemptId,
  type Rollout,
  type RolloutCreate,
  RolloutFinished,
  type RolloutPatch,
  type RolloutStatus,
  StaleAttempt,
} from "../protocol/index.js";

/** What the attempt checks read of a rollout: its id, state and current attempt. */
export interface RolloutGate {
  rollout_id: string;
  status: Pick<RolloutStatus, "state" | "last_attempt_id">;
}

/** Current time in epoch seconds (float), the unit of every stored timestamp. */
export function nowSeconds(): number {
  return Date.now() / 1000;
}

/** A fresh rollout id: `ro-` + UUID v4. */
export function newRolloutId(): string {
  return `ro-${randomUUID()}`;
}

/**
 * Builds the stored form of a create: state `queuing`, attempt "0", version 1.
 * @param now - epoch seconds
 */
export function buildRollout(create: RolloutCreate, now: number): Rollout {
  return {
    rollout_id: create.rollout_id ?? newRolloutId(),
    input: create.input,
    is_train: create.is_train,
    config: create.config,
    metadata: create.metadata,
    status: {
      state: "queuing",
      k8s_job_name: null,
      last_attempt_id: FIRST_ATTEMPT_ID,
      error_message: null,
      version: 1,
      created_at: now,
      updated_at: now,
    },
  };
}

/** Outcome of {@link applyPatch}. */
export interface PatchOutcome {
  rollout: Rollout;
  /** True when this patch moved the rollout into a terminal state (append it to the terminal cursor). */
  becameTerminal: boolean;
  /** The attempt that was superseded by a retry, if the patch started a new attempt. */
  supersededAttemptId: string | null;
}

/**
 * Applies a status patch to a stored rollout without mutating it.
 *
 * Retry rule: a patch to `failed` while `config.max_attempts` is not used up moves the rollout back to `queuing` with
 * the next attempt id instead, keeping the error in `error_message`. Only this rule starts attempts: a patch's
 * `last_attempt_id` may only name the current attempt (a no-op, e.g. the controller's "attempt 1 is running").
 *
 * @param attempts - every attempt id this rollout has had (used to tell superseded attempts from unknown ones)
 * @param now - epoch seconds
 * @throws {RolloutFinished} the rollout is already terminal (any patch, even an empty one)
 * @throws {InvalidTransition} a move the state machine forbids
 * @throws {StaleAttempt} `last_attempt_id` names a superseded attempt
 * @throws {Conflict} `last_attempt_id` names an attempt the rollout never had (unknown or future)
 */
export function applyPatch(
  rollout: Rollout,
  patch: RolloutPatch,
  attempts: ReadonlySet<string>,
  now: number,
): PatchOutcome {
  const current = rollout.status;
  if (isTerminal(current.state)) throw new RolloutFinished(rollout.rollout_id, current.state);
  const requested = patch.status ?? {};
  const next = { ...current, version: current.version + 1, updated_at: now };
  let supersededAttemptId: string | null = null;

  if (requested.last_attempt_id !== undefined && requested.last_attempt_id !== current.last_attempt_id) {
    assertNamedAttempt(rollout, requested.last_attempt_id, attempts);
  }
  if (requested.k8s_job_name !== undefined) next.k8s_job_name = requested.k8s_job_name;
  if (requested.error_message !== undefined) next.error_message = requested.error_message;

  if (requested.state !== undefined) {
    assertTransition(rollout.rollout_id, current.state, requested.state);
    next.state = requested.state;
    const attemptNumber = Number(next.last_attempt_id ?? FIRST_ATTEMPT_ID);
    const canRetry = Number.isInteger(attemptNumber) && attemptNumber + 1 < rollout.config.max_attempts;
    if (requested.state === "failed" && current.state === "running" && canRetry) {
      supersededAttemptId = next.last_attempt_id ?? FIRST_ATTEMPT_ID;
      next.state = "queuing";
      next.last_attempt_id = nextAttemptId(supersededAttemptId);
      next.k8s_job_name = null;
    }
  }
  const becameTerminal = !isTerminal(current.state) && isTerminal(next.state);
  return { rollout: { ...rollout, status: next }, becameTerminal, supersededAttemptId };
}

/**
 * Rejects a patch whose `last_attempt_id` is not the current attempt.
 * @throws {StaleAttempt} it names a superseded attempt
 * @throws {Conflict} it names an attempt the rollout never had (unknown, future or null)
 */
function assertNamedAttempt(rollout: Rollout, named: string | null, attempts: ReadonlySet<string>): never {
  const current = rollout.status.last_attempt_id;
  if (named !== null && attempts.has(named)) throw new StaleAttempt(rollout.rollout_id, named, current);
  throw new Conflict(
    `Rollout ${rollout.rollout_id}: last_attempt_id ${named === null ? "null" : JSON.stringify(named)} is not the ` +
      `current attempt (current: ${current ?? "none"}); a patch may only name the current attempt, new attempts ` +
      "start when a failed attempt is retried",
  );
}

/**
 * Checks that a write may target `attemptId`: only the rollout's current attempt may be written.
 * @throws {StaleAttempt} otherwise
 */
export function assertCurrentAttempt(rollout: RolloutGate, attemptId: string): void {
  if (rollout.status.last_attempt_id !== attemptId) {
    throw new StaleAttempt(rollout.rollout_id, attemptId, rollout.status.last_attempt_id);
  }
}

/**
 * Checks that events may be appended to `attemptId`: it is the current attempt and the rollout is not terminal.
 * A terminal rollout still answers a batch whose every event is a replay (an `event_id` already stored), so a client
 * retrying a post that landed just before the rollout finished gets the stored events, not an error.
 * @param isReplay - true when every event of the batch carries an `event_id` already stored for this rollout;
 *   called only for a terminal rollout
 * @throws {StaleAttempt} `attemptId` is not the current attempt
 * @throws {RolloutFinished} the rollout is terminal and the batch holds a new event
 */
export function assertEventsWritable(rollout: RolloutGate, attemptId: string, isReplay: () => boolean): void {
  assertCurrentAttempt(rollout, attemptId);
  if (isTerminal(rollout.status.state) && !isReplay()) {
    throw new RolloutFinished(rollout.rollout_id, rollout.status.state);
  }
}
