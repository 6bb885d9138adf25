/**
 * @module Pause state of the proxy: while paused, new model calls get 429 + `Retry-After`; calls in flight finish.
 * With a {@link SharedPause} (gateways on one PostgreSQL database) a pause on any replica pauses all, and the
 * in-flight count sums every live replica. A pause with a lease ends by itself unless renewed, so a trainer that
 * crashed mid-update cannot lock agents out; without one (Agent Lightning v1.0's) it lasts until resumed.
 */
import type { PauseRecord, SharedPause } from "../../store/shared-pause.js";

/** The body of `GET /proxy/state`. */
export interface PauseState {
  paused: boolean;
  /** Seconds a paused agent should wait before retrying (the `Retry-After` value). */
  retry_after_seconds: number;
  /** Why the proxy is paused; null when running. */
  reason: string | null;
  /** Model calls currently in flight (a stream counts until its last byte reaches the agent); every replica's. */
  inflight: number;
  /** When the pause ends by itself unless renewed (epoch seconds); null when running or paused without a lease. */
  lease_expires_at: number | null;
}

/** A pause or resume as `POST /proxy/pause` and `/proxy/resume` ask for it. */
export interface PauseChange {
  paused: boolean;
  retry_after_seconds: number;
  reason: string | null;
  /** The pause ends by itself this many seconds from now unless renewed; null or absent: never. */
  lease_seconds?: number | null;
}

/** Pause flag plus an in-flight counter. One instance per gateway; single-threaded, so no locks are needed. */
export class PauseController {
  private record: Omit<PauseRecord, "epoch" | "lease_expires_at"> = {
    paused: false,
    retry_after_seconds: 0,
    reason: null,
  };
  /** The newest shared epoch applied (0 without a shared pause). */
  private epoch = 0;
  /** When the lease of the pause this replica took ends (ms since the epoch); null without one. */
  private expiresAtMs: number | null = null;
  private inflight = 0;
  /** When this gateway last went from running to paused (ms since the epoch); null while running. */
  private pausedSinceMs: number | null = null;
  private waiters: (() => void)[] = [];
  private leaseExpired: (reason: string | null) => void = () => {};

  /**
   * @param shared - the pause state shared with other gateways; absent for a gateway that is alone on its store
   * @param nowMs - the clock leases are measured by, ms since the epoch (tests pass one they move by hand)
   */
  constructor(
    private readonly shared?: SharedPause,
    private readonly nowMs: () => number = Date.now,
  ) {
    if (!shared) return;
    this.applyShared(shared.current());
    shared.onChange((record) => this.applyShared(record));
  }

  /** A pause or resume from any replica: applied at once (synchronously), then acknowledged with our count. */
  private applyShared(record: PauseRecord): void {
    this.notePaused(record.paused);
    this.record = { paused: record.paused, retry_after_seconds: record.retry_after_seconds, reason: record.reason };
    this.epoch = record.epoch;
    this.expiresAtMs = record.paused && record.lease_expires_at !== null ? record.lease_expires_at * 1000 : null;
    this.shared?.report(this.inflight, this.epoch, true);
  }

  /**
   * Stops admitting new calls on this gateway; calls in flight go on. Local only: see {@link setPaused}.
   * @param retryAfterSeconds - the `Retry-After` value paused agents get, seconds
   * @param reason - free text shown to agents and in `GET /proxy/state`
   * @param leaseSeconds - the pause ends by itself this many seconds from now unless renewed; null: never
   */
  pause(retryAfterSeconds: number, reason: string | null, leaseSeconds: number | null = null): void {
    this.notePaused(true);
    this.record = { paused: true, retry_after_seconds: retryAfterSeconds, reason };
    this.expiresAtMs = leaseSeconds === null ? null : this.nowMs() + leaseSeconds * 1000;
  }

  /** Admits new calls again on this gateway. Local only: see {@link setPaused}. */
  resume(): void {
    this.notePaused(false);
    this.record = { paused: false, retry_after_seconds: 0, reason: null };
    this.expiresAtMs = null;
  }

  /** Keeps {@link pausedForMs} right: a renewal of a pause does not restart its clock. */
  private notePaused(paused: boolean): void {
    if (!paused) this.pausedSinceMs = null;
    else this.pausedSinceMs ??= this.nowMs();
  }

  /** @returns how long this gateway has been paused, ms (a renewal does not reset it); null while running */
  pausedForMs(): number | null {
    this.expire();
    return this.pausedSinceMs === null ? null : this.nowMs() - this.pausedSinceMs;
  }

  /**
   * Sets who hears of a pause that ended because its lease ran out (e.g. to log it).
   * @param listener - called once per expired pause with the pause's reason
   */
  onLeaseExpired(listener: (reason: string | null) => void): void {
    this.leaseExpired = listener;
  }

  /** Ends a pause whose lease has run out (checked whenever the state is read or a call arrives). */
  private expire(): void {
    if (!this.record.paused || this.expiresAtMs === null || this.nowMs() < this.expiresAtMs) return;
    const reason = this.record.reason;
    this.resume();
    if (this.shared) {
      // Lift it for every replica, unless a renewal (a newer epoch) was written meanwhile; every replica watching the
      // same lease tries this, and the first one wins. A failed write: the others still expire it by their own clock.
      const resume = { paused: false, retry_after_seconds: 0, reason: null, lease_expires_at: null };
      this.shared.set(resume, this.epoch).then(
        (record) => record && this.applyShared(record),
        () => {},
      );
    }
    this.leaseExpired(reason);
  }

  /**
   * Pauses or resumes every gateway sharing the pause state (this one alone when there is none).
   * @param next - the new state; `retry_after_seconds` and `reason` are reset when resuming; a pause's lease is
   *   watched by this replica (pausing again renews it)
   * @throws {StoreUnavailable} the shared state cannot be written
   */
  async setPaused(next: PauseChange): Promise<void> {
    const lease = next.paused ? (next.lease_seconds ?? null) : null;
    const expiresAtMs = lease === null ? null : this.nowMs() + lease * 1000;
    if (this.shared) {
      const record = next.paused
        ? { paused: true, retry_after_seconds: next.retry_after_seconds, reason: next.reason }
        : { paused: false, retry_after_seconds: 0, reason: null };
      const written = await this.shared.set({
        ...record,
        lease_expires_at: expiresAtMs === null ? null : expiresAtMs / 1000,
      });
      if (written) this.applyShared(written);
    } else if (next.paused) this.pause(next.retry_after_seconds, next.reason, lease);
    else this.resume();
  }

  /** @returns this gateway's state, its own calls in flight only */
  state(): PauseState {
    this.expire();
    return {
      ...this.record,
      inflight: this.inflight,
      lease_expires_at: this.expiresAtMs === null ? null : this.expiresAtMs / 1000,
    };
  }

  /**
   * The state `GET /proxy/state` answers: with a shared pause, `inflight` adds every other live replica's calls (a
   * replica that has not yet applied the latest pause or resume counts as at least 1).
   * @throws {StoreUnavailable} the shared state cannot be read
   */
  async clusterState(): Promise<PauseState> {
    const own = this.state();
    if (!this.shared) return own;
    return { ...own, inflight: own.inflight + (await this.shared.othersInflight(this.epoch)) };
  }

  /**
   * Admits one call: counts it in flight unless paused. Check and count happen in one synchronous step, so a pause
   * either sees this call counted or rejects it.
   * @returns a `release` function to call exactly once when the call is over, or null when paused
   */
  tryEnter(): (() => void) | null {
    this.expire();
    if (this.record.paused) return null;
    this.inflight++;
    this.shared?.report(this.inflight, this.epoch, false);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inflight--;
      // While paused, the replica draining the gateways waits for this count: publish it at once.
      this.shared?.report(this.inflight, this.epoch, this.record.paused);
      if (this.inflight === 0) this.wakeWaiters();
    };
  }

  /** @returns a promise that resolves once no call is in flight on this gateway (at once when none is) */
  drained(): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private wakeWaiters(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
