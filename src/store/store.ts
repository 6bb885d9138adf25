/** @module The `Store` interface; memory, SQLite (default) and PostgreSQL implement it and pass `store.contract.ts`. */
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

/** An event to append; `dataJson`, when given, is `data`'s JSON text, stored as is instead of serialising again. */
export type EventWrite = EventCreate & { readonly dataJson?: string };

/** Filter of {@link Store.listEvents}. Results are in `sequence` order. */
export interface EventQuery {
  /** Only this attempt's events. */
  attemptId?: string;
  /** Only events of this type. */
  eventType?: string;
}

/**
 * The durable store; every method is atomic. Attempt rules (AGL v1.0, `rollout-rules.ts`): writes go to
 * `last_attempt_id`, "0" while null; a superseded attempt's writes throw `StaleAttempt`; an id never current is
 * accepted. `failed` with `max_attempts` left re-queues at the next attempt; events after the end are `late`.
 */
export interface Store {
  /** Creates rollouts in one transaction; an existing `rollout_id` returns the stored rollout unchanged. */
  createRollouts(creates: readonly RolloutCreate[]): Promise<Rollout[]>;
  /** @returns the rollout, or `undefined` when unknown */
  getRollout(rolloutId: string): Promise<Rollout | undefined>;
  /** @returns rollouts matching `query`, in creation order */
  listRollouts(query?: RolloutQuery): Promise<Rollout[]>;
  /**
   * Applies a status patch (`rollout-rules.ts` `applyPatch`); a newly terminal rollout joins the terminal cursor.
   * @throws {RolloutNotFound} | {RolloutFinished} | {InvalidTransition} | {StaleAttempt} | {Conflict}
   */
  patchRollout(rolloutId: string, patch: RolloutPatch): Promise<Rollout>;
  /** Deletes the rollout with all its events. @returns false when it did not exist */
  deleteRollout(rolloutId: string): Promise<boolean>;
  /** Rollouts in the order they became terminal, from cursor `after` (0: start); `next_after` continues. */
  listTerminal(after: number, limit: number): Promise<TerminalPage>;
  /**
   * Appends events in one transaction with server timestamps and gap-free per-rollout `sequence`s. A stored
   * `event_id` returns the stored event unchanged (a retry; nothing compared), so use a fresh id per event.
   * @throws {RolloutNotFound} | {StaleAttempt}
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
  /** Stores the next version of a resource (1 for a new name), atomic across gateways. */
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
   * A cache key for rollout statuses and models: changes at once after this store's non-append writes and shortly
   * after another process's. Equal values mean earlier answers still hold. Synchronous; compare for equality only.
   */
  revision(): number;
  /** A trivial query for `/healthz`. @throws {StoreUnavailable} */
  ping(): Promise<void>;
  /** Releases resources (closes the database). Further calls fail. */
  close(): Promise<void>;
}
