/**
 * @module Leases on running rollouts: a controller renews the lease of every attempt it runs (`POST /api/leases`);
 * an attempt whose lease runs out while its rollout is still `running` on it is failed "lease expired", which retries
 * it when the rollout has attempts left, so a rollout whose controller died does not stay `running` forever. Only
 * rollouts that were leased once can expire: Agent Lightning v1.0 clients, which never lease, are unaffected.
 *
 * Leases live in the gateway's memory: a restarted gateway knows a lease again at the controller's next renewal (a
 * gateway and its controller that both die leave their rollouts running until a controller comes back).
 */
import type { FastifyBaseLogger } from "fastify";
import { ArclightError, currentAttemptOf, isTerminal } from "../protocol/index.js";
import type { Store } from "../store/store.js";

/** One lease. */
interface Lease {
  attemptId: string;
  ttlMs: number;
  expiresAtMs: number;
}

/** The leases of one gateway. */
export class RolloutLeases {
  private readonly leases = new Map<string, Lease>();

  /**
   * Grants or renews the lease of an attempt.
   * @param rolloutId - the rollout
   * @param attemptId - the attempt the caller runs (a lease of another attempt is replaced)
   * @param ttlMs - how long the lease lasts unless renewed, ms
   * @returns when it expires, ms since the epoch
   */
  renew(rolloutId: string, attemptId: string, ttlMs: number, nowMs = Date.now()): number {
    const expiresAtMs = nowMs + ttlMs;
    this.leases.set(rolloutId, { attemptId, ttlMs, expiresAtMs });
    return expiresAtMs;
  }

  /** Forgets a lease (its rollout ended or moved on). */
  drop(rolloutId: string): void {
    this.leases.delete(rolloutId);
  }

  /** @returns the leases that have run out, removed from the table */
  takeExpired(nowMs = Date.now()): { rolloutId: string; attemptId: string; ttlMs: number }[] {
    const expired: { rolloutId: string; attemptId: string; ttlMs: number }[] = [];
    for (const [rolloutId, lease] of this.leases) {
      if (lease.expiresAtMs > nowMs) continue;
      this.leases.delete(rolloutId);
      expired.push({ rolloutId, attemptId: lease.attemptId, ttlMs: lease.ttlMs });
    }
    return expired;
  }
}

/**
 * Fails the attempts whose lease ran out while their rollout is still `running` on them; every `checkEveryMs`.
 * One failed patch (rollout deleted, moved on) is logged and skipped.
 * @param store - where rollouts live
 * @param leases - the lease table
 * @param log - the gateway's logger
 * @returns stops the watch
 */
export function watchLeases(
  store: Store,
  leases: RolloutLeases,
  log: FastifyBaseLogger,
  checkEveryMs = 1000,
): () => void {
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      for (const lease of leases.takeExpired()) await expire(store, lease, log);
    } finally {
      busy = false;
    }
  }, checkEveryMs);
  timer.unref();
  return () => clearInterval(timer);
}

async function expire(
  store: Store,
  lease: { rolloutId: string; attemptId: string; ttlMs: number },
  log: FastifyBaseLogger,
): Promise<void> {
  const { rolloutId, attemptId } = lease;
  try {
    const rollout = await store.getRollout(rolloutId);
    if (rollout?.status.state !== "running" || currentAttemptOf(rollout.status) !== attemptId) return;
    const reason = `lease expired: no controller renewed it for ${lease.ttlMs / 1000} s`;
    const patched = await store.patchRollout(rolloutId, {
      status: { state: "failed", last_attempt_id: attemptId, error_message: reason },
    });
    const retried = !isTerminal(patched.status.state);
    log.warn({ rolloutId, attemptId, retried }, "rollout lease expired");
  } catch (err) {
    if (err instanceof ArclightError && err.status < 500) return; // finished or moved on meanwhile
    log.error({ err, rolloutId, attemptId }, "could not expire a rollout lease; will not retry");
  }
}
