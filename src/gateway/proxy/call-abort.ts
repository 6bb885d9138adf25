/**
 * @module Why the proxy itself cut a call short: the call's total deadline passed, or the proxy paused and the call ran
 * past the drain deadline. Used as an `AbortSignal` reason, so every layer (upstream request, body read, stream
 * relay) can tell these from the agent hanging up. A call's switch is a {@link CallAbort}.
 */
import { EventEmitter } from "node:events";
import { type ArclightError, CallAborted, UpstreamTimeout } from "../../protocol/index.js";

/**
 * The abort switch of one proxied call, and its signal: an `EventEmitter` with `aborted` and `reason`, which undici
 * takes as a request's `signal` (it listens once for `abort`). One per call: an `AbortController` with undici's
 * listener on its `AbortSignal` cost about 7 µs per call on this machine, this about 0.1 µs (bench/proxy.ts).
 * Emits `abort` once, on the first {@link CallAbort.abort}.
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
