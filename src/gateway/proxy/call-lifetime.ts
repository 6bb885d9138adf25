/**
 * @module The lifetime of a model call: its abort switch ({@link CallAbort}) and why the proxy cut it short (its total
 * deadline, or a drain after a pause), the calls in flight on this gateway with the drain watchdog, and
 * {@link startCall}, which every model call (chat, completions, tito) runs under.
 */
import { EventEmitter } from "node:events";
import type { FastifyReply } from "fastify";
import { type ArclightError, CallAborted, UpstreamTimeout } from "../../protocol/index.js";
import type { PauseController } from "./pause.js";

/**
 * The abort switch of one proxied call, and its signal: an `EventEmitter` with `aborted` and `reason`, which undici
 * takes as a request's `signal` (it listens once for `abort`). Emits `abort` once, on the first
 * {@link CallAbort.abort}.
 */
export class CallAbort extends EventEmitter {
  /** True once {@link abort} was called. */
  aborted = false;
  /** What {@link abort} was given: a {@link CallDeadline}, a {@link DrainDeadline}, or undefined (the agent left). */
  reason: unknown = undefined;

  /** Aborts the call (later calls do nothing). @param reason - why; see {@link reason} */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit("abort");
  }
}

/** The call's total deadline (`upstreamTotalTimeoutMs`) passed. */
export class CallDeadline extends Error {
  /** @param limitMs - the deadline that passed, ms */
  constructor(readonly limitMs: number) {
    super(`Upstream call did not finish within ${limitMs} ms`);
    this.name = "CallDeadline";
  }
}

/** The proxy paused and the call was still running `limitMs` later. */
export class DrainDeadline extends Error {
  /**
   * @param limitMs - the drain deadline, ms
   * @param retryAfterSeconds - the pause's `Retry-After`
   */
  constructor(
    readonly limitMs: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`Call aborted: the gateway paused for a weight update and the call was still running ${limitMs} ms later`);
    this.name = "DrainDeadline";
  }
}

/**
 * The wire error for a call the proxy aborted, or null when `signal` was not aborted by the proxy (the agent left).
 * @param signal - the call's abort signal
 * @returns `UpstreamTimeout` (504) for a passed deadline, `CallAborted` (503 + `Retry-After`) for a drain
 */
export function proxyAbortError(signal: CallAbort | undefined): ArclightError | null {
  const reason: unknown = signal?.reason;
  if (reason instanceof CallDeadline) return new UpstreamTimeout(reason.message, { cause: reason });
  if (reason instanceof DrainDeadline)
    return new CallAborted(reason.message, reason.retryAfterSeconds, { cause: reason });
  return null;
}

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
