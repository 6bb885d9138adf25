/**
 * @module The proxied calls in flight on this gateway, each with its abort controller, and the drain watchdog that
 * aborts the ones still running `drainTimeoutMs` after the proxy paused (a trickling upstream must not hold a weight
 * update forever).
 */
import { DrainDeadline } from "./call-abort.js";
import type { PauseController } from "./pause.js";

/** The abort controllers of the calls in flight. */
export class InflightCalls {
  private readonly calls = new Set<AbortController>();

  /**
   * Adds a call.
   * @param abort - the call's controller
   * @returns removes the call again (call once it has ended)
   */
  add(abort: AbortController): () => void {
    this.calls.add(abort);
    return () => this.calls.delete(abort);
  }

  /** Number of calls in flight. */
  get size(): number {
    return this.calls.size;
  }

  /**
   * Aborts every call in flight with `reason`.
   * @returns how many were aborted
   */
  abortAll(reason: unknown): number {
    const calls = [...this.calls];
    for (const abort of calls) abort.abort(reason);
    this.calls.clear();
    return calls.length;
  }
}

/**
 * Checks every `checkEveryMs` whether the proxy has been paused for `drainTimeoutMs` with calls still in flight, and
 * aborts them with a {@link DrainDeadline}.
 * @param inflight - the calls in flight
 * @param pause - the pause state
 * @param drainTimeoutMs - how long calls may run on after a pause, ms
 * @param onAbort - told how many calls were aborted (for the log)
 * @returns stops the watchdog
 */
export function watchDrain(
  inflight: InflightCalls,
  pause: PauseController,
  drainTimeoutMs: number,
  onAbort: (count: number) => void,
  checkEveryMs = Math.min(1000, drainTimeoutMs),
): () => void {
  const timer = setInterval(() => {
    const pausedForMs = pause.pausedForMs();
    if (pausedForMs === null || pausedForMs < drainTimeoutMs || inflight.size === 0) return;
    const retryAfterSeconds = pause.state().retry_after_seconds;
    onAbort(inflight.abortAll(new DrainDeadline(drainTimeoutMs, retryAfterSeconds)));
  }, checkEveryMs);
  timer.unref();
  return () => clearInterval(timer);
}
