/** @module Pure rules every store applies: building a rollout, applying a status patch, checking event writes. */
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

/** A new rollout: `queuing`, `last_attempt_id` null (writes go to "0"), version 1. */
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
  /** Attempts this patch made current, in order; empty when the current attempt did not change. */
  newAttemptIds: string[];
}

/**
 * Applies a status patch without mutating the rollout (AGL v1.0 attempt rules, superseded attempts protected):
 * 1. naming the current attempt changes nothing;
 * 2. naming a superseded attempt throws `StaleAttempt`, so an old attempt's late report never ends the current one;
 * 3. naming an id never current makes it current;
 * 4. `failed` with `max_attempts` left goes back to `queuing` at the next attempt id, keeping `error_message`;
 * 5. a patch that changes nothing returns the rollout unchanged; any change bumps `version` and `updated_at`.
 * @throws {RolloutFinished} | {InvalidTransition} | {StaleAttempt} | {Conflict} (`last_attempt_id` null)
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
 * Events go to the current attempt in any state (AGL starts agents before patching `running`) or to an id never
 * current; a terminal rollout's are flagged late.
 * @throws {StaleAttempt} `attemptId` is superseded, even for replays
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
