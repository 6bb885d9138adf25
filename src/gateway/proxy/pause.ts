/**
 * @module Pause state of the proxy: while paused, new model calls get 429 + `Retry-After`; calls already in flight
 * finish. The trainer pauses, waits for {@link PauseController.drained}, swaps weights, then resumes.
 */

/** The body of `GET /proxy/state`. */
export interface PauseState {
  paused: boolean;
  /** Seconds a paused agent should wait before retrying (the `Retry-After` value). */
  retry_after_seconds: number;
  /** Why the proxy is paused; null when running. */
  reason: string | null;
  /** Model calls currently in flight (a stream counts until its last byte reaches the agent). */
  inflight: number;
}

/** Pause flag plus an in-flight counter. One instance per gateway; single-threaded, so no locks are needed. */
export class PauseController {
  private paused = false;
  private retryAfterSeconds = 0;
  private reason: string | null = null;
  private inflight = 0;
  private waiters: (() => void)[] = [];

  /**
   * Stops admitting new calls; calls in flight go on.
   * @param retryAfterSeconds - the `Retry-After` value paused agents get, seconds
   * @param reason - free text shown to agents and in `GET /proxy/state`
   */
  pause(retryAfterSeconds: number, reason: string | null): void {
    this.paused = true;
    this.retryAfterSeconds = retryAfterSeconds;
    this.reason = reason;
  }

  /** Admits new calls again. */
  resume(): void {
    this.paused = false;
    this.retryAfterSeconds = 0;
    this.reason = null;
  }

  /** @returns the current state, as `GET /proxy/state` answers it */
  state(): PauseState {
    return {
      paused: this.paused,
      retry_after_seconds: this.retryAfterSeconds,
      reason: this.reason,
      inflight: this.inflight,
    };
  }

  /**
   * Admits one call: counts it in flight unless paused. Check and count happen in one synchronous step, so a pause
   * either sees this call counted or rejects it.
   * @returns a `release` function to call exactly once when the call is over, or null when paused
   */
  tryEnter(): (() => void) | null {
    if (this.paused) return null;
    this.inflight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inflight--;
      if (this.inflight === 0) this.wakeWaiters();
    };
  }

  /** @returns a promise that resolves once no call is in flight (at once when none is) */
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
