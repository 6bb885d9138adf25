/**
 * @module The lifetime of a model call: its abort switch, ended by the agent leaving, the call's total deadline, or
 * the drain deadline after a pause ({@link watchDrain}).
 */
import { EventEmitter } from "node:events";
import type { FastifyReply } from "fastify";
import { type ArclightError, CallAborted, UpstreamTimeout } from "../../protocol/index.js";
import type { PauseController } from "./pause.js";

/** The abort switch of one call; undici takes it as a request's `signal`. Emits `abort` once. */
export class CallAbort extends EventEmitter {
  /** True once {@link abort} was called. */
  aborted = false;
  /** A {@link CallDeadline}, a {@link DrainDeadline}, or undefined (the agent left). */
  reason: unknown = undefined;

  /** Aborts the call; later calls do nothing. */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit("abort");
  }
}

/** The call's total deadline (`upstreamTotalTimeoutMs`) passed. */
export class CallDeadline extends Error {
  constructor(readonly limitMs: number) {
    super(`Upstream call did not finish within ${limitMs} ms`);
    this.name = "CallDeadline";
  }
}

/** The proxy paused and the call was still running `limitMs` later. */
export class DrainDeadline extends Error {
  constructor(
    readonly limitMs: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`Call aborted: the gateway paused for a weight update and the call was still running ${limitMs} ms later`);
    this.name = "DrainDeadline";
  }
}

/** `UpstreamTimeout` (504) for a passed deadline, `CallAborted` (503 + `Retry-After`) for a drain, else null. */
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

  /** Adds a call. @returns removes it again */
  add(abort: CallAbort): () => void {
    this.calls.add(abort);
    return () => this.calls.delete(abort);
  }

  /** Number of calls in flight. */
  get size(): number {
    return this.calls.size;
  }

  /** Aborts every call in flight. @returns how many */
  abortAll(reason: unknown): number {
    const calls = [...this.calls];
    for (const abort of calls) abort.abort(reason);
    this.calls.clear();
    return calls.length;
  }
}

/**
 * Aborts the calls in flight with a {@link DrainDeadline} once the proxy has been paused for `drainTimeoutMs`.
 * @param onAbort - told how many calls were aborted
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
 * Starts a call's lifetime: its {@link CallAbort} fires when the agent's connection closes, after `totalMs` (a
 * {@link CallDeadline}), or by the drain watchdog.
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
