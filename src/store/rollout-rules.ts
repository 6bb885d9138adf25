/**
 * @module Pure rules every store applies the same way: building a new rollout, applying a status patch (transition
 * check, attempt moves and retries, version bump) and checking which attempt an event write may target.
 */
import { randomUUID } from "node:crypto";
import {
  assertTransition,
  Conflict,
  currentAttemptOf,
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
export interface AttemptCheckedRollout {
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
 * Builds the stored form of a create: state `queuing`, `last_attempt_id` null (no attempt yet; writes go to "0"),
 * version 1. The caller records "0" as the rollout's first current attempt.
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
      last_attempt_id: null,
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
  /** False when the patch changed nothing: `rollout` is the stored one, version not bumped; nothing to write. */
  changed: boolean;
  /** True when this patch moved the rollout into a terminal state (append it to the terminal cursor). */
  becameTerminal: boolean;
  /**
   * Attempts this patch made current (a patch naming a new `last_attempt_id`, then possibly its retry), in order; the
   * store adds them to the rollout's attempts. Empty when the current attempt did not change.
   */
  newAttemptIds: string[];
}

/**
 * Applies a status patch to a stored rollout without mutating it. Attempt rules (Agent Lightning v1.0 plus arclight's
 * protection of superseded attempts):
 * 1. `last_attempt_id` naming the current attempt changes nothing (null → "0" is written out).
 * 2. Naming an attempt that was current once and is no longer (superseded) throws `StaleAttempt`, whatever else the
 *    patch holds: a late report of an old attempt can never finish or fail the current one.
 * 3. Naming an id never current before (AGL lets a controller name its attempts) makes it the current attempt.
 * 4. Retry (arclight extension): a patch to `failed` of a running rollout whose `config.max_attempts` is not used up
 *    moves it back to `queuing` with the next decimal attempt id, keeping the error in `error_message`.
 * 5. A patch that changes nothing (same state, same fields, or `{}`) is a no-op: the rollout comes back unchanged,
 *    version not bumped. Any change bumps `version` and sets `updated_at`.
 *
 * @param attempts - every attempt id that has been this rollout's current attempt ("0" from creation on)
 * @param now - epoch seconds
 * @throws {RolloutFinished} the rollout is already terminal (any patch, even an empty one)
 * @throws {InvalidTransition} a move the state machine forbids
 * @throws {StaleAttempt} `last_attempt_id` names a superseded attempt
 * @throws {Conflict} `last_attempt_id` is null (a rollout's attempt cannot be unset)
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
  const next = { ...current };
  const currentAttempt = currentAttemptOf(current);
  const newAttemptIds: string[] = [];

  if (requested.last_attempt_id !== undefined) {
    const named = requested.last_attempt_id;
    if (named === null) throw new Conflict(`Rollout ${rollout.rollout_id}: last_attempt_id cannot be set to null`);
    if (named !== currentAttempt && attempts.has(named)) {
      throw new StaleAttempt(rollout.rollout_id, named, currentAttempt);
    }
    if (named !== currentAttempt) newAttemptIds.push(named);
    next.last_attempt_id = named;
  }
  if (requested.k8s_job_name !== undefined) next.k8s_job_name = requested.k8s_job_name;
  if (requested.error_message !== undefined) next.error_message = requested.error_message;

  if (requested.state !== undefined) {
    assertTransition(rollout.rollout_id, current.state, requested.state);
    next.state = requested.state;
    const attempt = currentAttemptOf(next);
    const attemptNumber = /^\d+$/.test(attempt) ? Number(attempt) : Number.NaN;
    const canRetry = Number.isSafeInteger(attemptNumber) && attemptNumber + 1 < rollout.config.max_attempts;
    if (requested.state === "failed" && current.state === "running" && canRetry) {
      next.state = "queuing";
      next.last_attempt_id = nextAttemptId(attempt);
      newAttemptIds.push(next.last_attempt_id);
      next.k8s_job_name = null;
    }
  }
  const changed = STATUS_FIELDS.some((field) => next[field] !== current[field]);
  if (!changed) return { rollout, changed, becameTerminal: false, newAttemptIds };
  const status = { ...next, version: current.version + 1, updated_at: now };
  const becameTerminal = isTerminal(status.state);
  return { rollout: { ...rollout, status }, changed, becameTerminal, newAttemptIds };
}

/** The status fields a patch may change. */
const STATUS_FIELDS = ["state", "k8s_job_name", "last_attempt_id", "error_message"] as const;

/** How an event append relates to the rollout's attempts: decided by {@link checkEventWrite}. */
export interface EventWriteCheck {
  /** The rollout was `succeeded` or `failed` when the events arrived: new events are stored with `late: true`. */
  late: boolean;
}

/**
 * Checks that events may be appended to `attemptId`, per AGL v1.0 with arclight's protection:
 * - the current attempt: accepted, in any state (AGL's controllers start the agent before they patch `running`, so
 *   a `queuing` rollout's first events are normal);
 * - an attempt id never current (AGL lets any writer name an attempt): accepted, stored under that id, the current
 *   attempt unchanged;
 * - a superseded attempt (current once, then replaced by a retry or a patch): `StaleAttempt`, even for replays.
 * A terminal rollout still takes events; they are flagged late.
 * @param wasCurrent - whether `attemptId` has been the rollout's current attempt; called only when it is not current
 * @throws {StaleAttempt} `attemptId` is a superseded attempt
 */
export function checkEventWrite(
  rollout: AttemptCheckedRollout,
  attemptId: string,
  wasCurrent: (attemptId: string) => boolean,
): EventWriteCheck {
  const current = currentAttemptOf(rollout.status);
  if (attemptId !== current && wasCurrent(attemptId)) {
    throw new StaleAttempt(rollout.rollout_id, attemptId, current);
  }
  return { late: isTerminal(rollout.status.state) };
}
