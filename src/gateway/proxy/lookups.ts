/**
 * @module The proxy's hot-path reads, cached: each rollout's current attempt and state, and each model's registered
 * endpoints. Each call starts with {@link ProxyLookups.refresh}, which drops both caches when `store.revision()` has
 * changed, i.e. after any rollout or model write of this gateway (the very next call sees a finished rollout, a new
 * attempt, a new endpoint or a new policy version) or, a few ms later, of another process sharing the store (see
 * `Store.revision`). A call's reads
 * then answer as of its refresh: a write landing during the call is concurrent with it, and the next call sees it.
 */
import type { Model, RolloutState } from "../../protocol/index.js";
import type { Store } from "../../store/store.js";

/** The part of a rollout the proxy checks on every call. */
export interface CallRolloutState {
  readonly lastAttemptId: string | null;
  readonly state: RolloutState;
}

/** Past this many cached rollouts the cache starts over (a long run with no rollout write would otherwise grow it). */
const MAX_CACHED_ROLLOUTS = 10_000;

/**
 * Cached `getRollout` (status only) and `listModels(model)` reads, valid while the store's revision is unchanged.
 * Call {@link refresh} first in every call.
 */
export class ProxyLookups {
  private revision = Number.NaN;
  /** Bumped whenever the caches are dropped: a read begun before a drop is not cached after it. */
  private generation = 0;
  private readonly rollouts = new Map<string, CallRolloutState>();
  private readonly endpoints = new Map<string, readonly Model[]>();

  constructor(private readonly store: Store) {}

  /**
   * The rollout's current attempt and state.
   * @returns undefined for an unknown rollout (not cached: it may be created at any time)
   */
  async rollout(rolloutId: string): Promise<CallRolloutState | undefined> {
    const generation = this.generation;
    const cached = this.rollouts.get(rolloutId);
    if (cached) return cached;
    const rollout = await this.store.getRollout(rolloutId);
    if (!rollout) return undefined;
    const gate = { lastAttemptId: rollout.status.last_attempt_id, state: rollout.status.state };
    if (this.generation === generation) {
      if (this.rollouts.size >= MAX_CACHED_ROLLOUTS) this.rollouts.clear();
      this.rollouts.set(rolloutId, gate);
    }
    return gate;
  }

  /** @returns the model's registered endpoints (frozen; possibly empty), ordered by endpoint URL */
  async endpointsOf(model: string): Promise<readonly Model[]> {
    const generation = this.generation;
    const cached = this.endpoints.get(model);
    if (cached) return cached;
    const models = Object.freeze((await this.store.listModels(model)).map((m) => Object.freeze({ ...m })));
    // Only models the store has: an agent sending random names must not grow the cache.
    if (this.generation === generation && models.length > 0) this.endpoints.set(model, models);
    return models;
  }

  /**
   * Drops both caches when the store's revision moved; call it once at the start of every call. A read that raced a
   * write is dropped by the next refresh, since that write moved the revision.
   */
  refresh(): void {
    const revision = this.store.revision();
    if (revision !== this.revision) {
      this.rollouts.clear();
      this.endpoints.clear();
      this.revision = revision;
      this.generation++;
    }
  }
}
