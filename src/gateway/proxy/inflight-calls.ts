/**
 * @module The proxied calls in flight on this gateway, each with its abort switch, the drain watchdog that aborts the
 * ones still running `drainTimeoutMs` after the proxy paused (a trickling upstream must not hold a weight update
 * forever), and {@link startCall}, which every model call (chat, completions, tito) runs under.
 */

import type { FastifyReply } from "fastify";
import { CallAbort, CallDeadline, DrainDeadline } from "./call-abort.js";
import type { PauseController } from "./pause.js";

/** The abort switches of the calls in flight. */
export class InflightCalls {
  private readonly calls = new Set<CallAbort>();

  /**
   * Adds a call.
   * @param abort - the call's switch
   * @returns removes the call again (call once it has ended)
   */
  add(abort: CallAbort): () => void {
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

/** A model call under way: its abort switch, and what ends it. */
export interface RunningCall {
  /** Aborted when the agent hangs up, at the call's total deadline, or by the drain watchdog. */
  readonly signal: CallAbort;
  /** Clears the deadline and the agent's close listener, and takes the call off the in-flight set; call once. */
  end(): void;
}

/**
 * Starts a call's lifetime: a {@link CallAbort} aborted when the agent's connection closes, after `totalMs`
 * (with a {@link CallDeadline}), or by the drain watchdog (the call is added to `inflight`).
 * @param inflight - the gateway's calls in flight
 * @param reply - the agent's reply (its raw response's `close` means the agent left, or the answer was sent)
 * @param totalMs - the call's total deadline (`upstreamTotalTimeoutMs`), ms
 */
export function startCall(inflight: InflightCalls, reply: FastifyReply, totalMs: number): RunningCall {
  const signal = new CallAbort();
  const onClose = (): void => signal.abort();
  reply.raw.once("close", onClose);
  const deadline = setTimeout(() => signal.abort(new CallDeadline(totalMs)), totalMs);
  const leave = inflight.add(signal);
  return {
    signal,
    end: () => {
      clearTimeout(deadline);
      leave();
      reply.raw.off("close", onClose);
    },
  };
}
