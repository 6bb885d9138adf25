/**
 * @module Pause state of the proxy: while paused, new model calls get 429 + `Retry-After`; calls already in flight
 * finish. The trainer pauses, waits until `GET /proxy/state` reports no call in flight, swaps weights, then resumes.
 * With a {@link SharedPause} (several gateways on one PostgreSQL database) a pause on any replica pauses all, and the
 * in-flight count is the sum over every live replica.
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
}

/** Pause flag plus an in-flight counter. One instance per gateway; single-threaded, so no locks are needed. */
export class PauseController {
  private record: Omit<PauseRecord, "epoch"> = { paused: false, retry_after_seconds: 0, reason: null };
  /** The newest shared epoch applied (0 without a shared pause). */
  private epoch = 0;
  private inflight = 0;
  private waiters: (() => void)[] = [];

  /**
   * @param shared - the pause state shared with other gateways; absent for a gateway that is alone on its store
   */
  constructor(private readonly shared?: SharedPause) {
    if (!shared) return;
    this.applyShared(shared.current());
    shared.onChange((record) => this.applyShared(record));
  }

  /** A pause or resume from any replica: applied at once (synchronously), then acknowledged with our count. */
  private applyShared(record: PauseRecord): void {
    this.record = { paused: record.paused, retry_after_seconds: record.retry_after_seconds, reason: record.reason };
    this.epoch = record.epoch;
    this.shared?.report(this.inflight, this.epoch, true);
  }

  /**
   * Stops admitting new calls on this gateway; calls in flight go on. Local only: see {@link setPaused}.
   * @param retryAfterSeconds - the `Retry-After` value paused agents get, seconds
   * @param reason - free text shown to agents and in `GET /proxy/state`
   */
  pause(retryAfterSeconds: number, reason: string | null): void {
    this.record = { paused: true, retry_after_seconds: retryAfterSeconds, reason };
  }

  /** Admits new calls again on this gateway. Local only: see {@link setPaused}. */
  resume(): void {
    this.record = { paused: false, retry_after_seconds: 0, reason: null };
  }

  /**
   * Pauses or resumes every gateway sharing the pause state (this one alone when there is none).
   * @param next - the new state; `retry_after_seconds` and `reason` are reset when resuming
   * @throws {StoreUnavailable} the shared state cannot be written
   */
  async setPaused(next: { paused: boolean; retry_after_seconds: number; reason: string | null }): Promise<void> {
    const record = next.paused ? next : { paused: false, retry_after_seconds: 0, reason: null };
    if (this.shared) this.applyShared(await this.shared.set(record));
    else if (record.paused) this.pause(record.retry_after_seconds, record.reason);
    else this.resume();
  }

  /** @returns this gateway's state, its own calls in flight only */
  state(): PauseState {
    return { ...this.record, inflight: this.inflight };
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
