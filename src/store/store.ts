/**
 * @module The `Store` interface: the durable home of rollouts, attempts, events and model endpoints.
 * Implementations: `memory.ts` (tests, throw-away runs), `sqlite.ts` (the default) and `postgres.ts` (several gateways
 * on one database). All pass `store.contract.ts`.
 */
import type {
  Event,
  EventCreate,
  Model,
  ResourceVersion,
  Rollout,
  RolloutCreate,
  RolloutPatch,
  RolloutState,
  TerminalPage,
} from "../protocol/index.js";

/** Filter of {@link Store.listRollouts}. Results are in creation order. */
export interface RolloutQuery {
  /** Keep rollouts in one of these states; all states when absent or empty. */
  states?: readonly RolloutState[];
  /** Keep only train (`true`) or only validation (`false`) rollouts. */
  isTrain?: boolean;
  /** Maximum rows returned; default 500. */
  limit?: number;
  /** Rows skipped first (pagination); default 0. */
  offset?: number;
}

/**
 * An event to append. `dataJson`, when given, must be the JSON text of `data` (the same value): a store that keeps JSON
 * text stores it as is instead of serialising `data` again (the proxy already holds most of it as text).
 */
export type EventWrite = EventCreate & { readonly dataJson?: string };

/** Filter of {@link Store.listEvents}. Results are in `sequence` order. */
export interface EventQuery {
  /** Only this attempt's events. */
  attemptId?: string;
  /** Only events of this type. */
  eventType?: string;
}

/**
 * The durable store. Every method is atomic: a failed call writes nothing.
 *
 * Attempt rules (Agent Lightning v1.0, plus arclight's protection of superseded attempts; `rollout-rules.ts`):
 * a new rollout has `status.last_attempt_id` null and its writes go to attempt "0". An attempt that was current and
 * has been replaced (by a retry, or by a patch naming a new `last_attempt_id`) is superseded: every write naming it
 * throws `StaleAttempt`. An attempt id never current is accepted for events (stored under it) and, in a patch,
 * becomes the current attempt. Retries (arclight extension): a rollout with `config.max_attempts > 1` patched to
 * `failed` while attempts remain goes back to `queuing` at the next attempt id ("1", …). Events that arrive after the
 * rollout finished are stored with `late: true`.
 */
export interface Store {
  /**
   * Creates rollouts in one transaction. A create naming an existing `rollout_id` returns the stored rollout unchanged
   * (idempotent; its events are kept); ids are generated for creates without one.
   * @returns the rollouts, in the order given
   */
  createRollouts(creates: readonly RolloutCreate[]): Promise<Rollout[]>;
  /** @returns the rollout, or `undefined` when unknown */
  getRollout(rolloutId: string): Promise<Rollout | undefined>;
  /** @returns rollouts matching `query`, in creation order */
  listRollouts(query?: RolloutQuery): Promise<Rollout[]>;
  /**
   * Applies a status patch: checks the state transition and the attempt rules, bumps `status.version`, sets
   * `updated_at`, and appends the rollout to the terminal cursor when it becomes terminal. A patch that changes
   * nothing (same state, same fields, `{}`) returns the rollout unchanged, version not bumped. A terminal rollout
   * takes no patch at all.
   * @throws {RolloutNotFound} unknown rollout
   * @throws {RolloutFinished} the rollout is `succeeded` or `failed`
   * @throws {InvalidTransition} a move the state machine forbids
   * @throws {StaleAttempt} `last_attempt_id` names a superseded attempt
   * @throws {Conflict} `last_attempt_id` is null
   */
  patchRollout(rolloutId: string, patch: RolloutPatch): Promise<Rollout>;
  /** Deletes the rollout with all its events. @returns false when it did not exist */
  deleteRollout(rolloutId: string): Promise<boolean>;
  /**
   * Rollouts in the order they became terminal, each listed once. `after` is a cursor (0 = from the start).
   * @returns a page and `next_after`, the cursor for the next call (equal to `after` when the page is empty)
   */
  listTerminal(after: number, limit: number): Promise<TerminalPage>;
  /**
   * Appends events to attempt `attemptId` in one transaction. Each gets the server's timestamp (epoch s) and the next
   * gap-free per-rollout `sequence`; events appended after the rollout finished get `late: true`. An `event_id`
   * already stored for this rollout (in any of its attempts) returns the stored event instead of a new one,
   * unchanged, even when the new post carries another `event_type` or `data`: a repeated id is taken to be a client's
   * retry, so nothing is compared or overwritten. Use a fresh id per event. An empty batch writes nothing and only
   * runs the checks.
   * @throws {RolloutNotFound} unknown rollout
   * @throws {StaleAttempt} `attemptId` is a superseded attempt
   */
  appendEvents(rolloutId: string, attemptId: string, events: readonly EventWrite[]): Promise<Event[]>;
  /** @returns the rollout's events in sequence order (empty for an unknown rollout) */
  listEvents(rolloutId: string, query?: EventQuery): Promise<Event[]>;
  /** @returns attempt ids that have events, ordered by their first event */
  listAttempts(rolloutId: string): Promise<string[]>;
  /** Inserts or updates endpoints keyed by (model, endpoint). @returns the stored models */
  upsertModels(models: readonly Model[]): Promise<Model[]>;
  /** @returns every registered model endpoint, or those of one model, ordered by (model, endpoint) */
  listModels(model?: string): Promise<Model[]>;
  /** Removes every registered endpoint, or those of one model. @returns how many were removed */
  deleteModels(model?: string): Promise<number>;
  /**
   * Stores a new version of a named resource: version 1 for a new name, else the latest + 1 (atomic, also across
   * gateways sharing one database).
   * @returns the stored version
   */
  addResourceVersion(name: string, value: unknown): Promise<ResourceVersion>;
  /** @returns one version of a resource (the latest when `version` is omitted), or undefined when there is none */
  getResource(name: string, version?: number): Promise<ResourceVersion | undefined>;
  /** @returns the latest version of every resource, ordered by name */
  listLatestResources(): Promise<ResourceVersion[]>;
  /** @returns the number of rollouts in each state (every state present, 0 when none) */
  countByState(): Promise<Record<RolloutState, number>>;
  /** @returns the number of stored events */
  countEvents(): Promise<number>;
  /**
   * A cache key for rollout statuses and model endpoints: it changes whenever a `getRollout` or `listModels` answer
   * may have changed since it was last read, i.e. at once after every write of this store other than an event
   * append, and shortly after a write of another process sharing the data (SQLite: at most `CROSS_PROCESS_POLL_MS`,
   * 5 ms, after the other connection's commit; PostgreSQL: one notification later). Equal values mean earlier answers
   * are still current, so the proxy can cache them. Synchronous and cheap (no disk read).
   * @returns an opaque number; compare it only for equality
   */
  revision(): number;
  /**
   * Checks that the database answers (a trivial query), for the gateway's `/healthz`.
   * @throws {StoreUnavailable} the database cannot be reached
   */
  ping(): Promise<void>;
  /** Releases resources (closes the database). Further calls fail. */
  close(): Promise<void>;
}
