/**
 * @module The proxy's per-call reads, cached: each rollout's current attempt and state, each model's endpoints. Every
 * call starts with {@link ProxyLookups.refresh}, which drops both caches when `store.revision()` moved (any rollout or
 * model write, this process's at once, another's a few ms later), so the next call sees every write before it.
 */
import type { Model, RolloutState } from "../../protocol/index.js";
import type { Store } from "../../store/store.js";

/** The part of a rollout the proxy checks on every call. */
export interface CallRolloutState {
  readonly lastAttemptId: string | null;
  readonly state: RolloutState;
}

/** Past this many cached rollouts the cache starts over. */
const MAX_CACHED_ROLLOUTS = 10_000;

/** Cached `getRollout` (status only) and `listModels(model)` reads, valid while the store's revision is unchanged. */
export class ProxyLookups {
  private revision = Number.NaN;
  /** Bumped whenever the caches are dropped: a read begun before a drop is not cached after it. */
  private generation = 0;
  private readonly rollouts = new Map<string, CallRolloutState>();
  private readonly endpoints = new Map<string, readonly Model[]>();

  constructor(private readonly store: Store) {}

  /** @returns the rollout's current attempt and state; undefined for an unknown rollout (not cached) */
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
    // Unknown names are not cached: an agent sending random names must not grow the cache.
    if (this.generation === generation && models.length > 0) this.endpoints.set(model, models);
    return models;
  }

  /** Drops both caches when the store's revision moved; a read that raced a write goes with the next refresh. */
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
