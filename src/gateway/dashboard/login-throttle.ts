/**
 * @module Wrong-key throttling of the dashboard login, per client address: after `maxFailures` wrong keys within a
 * window, that address is refused (429 with `Retry-After`) until the window ends, so the admin key cannot be guessed
 * at network speed. A right key does not clear the count early: a guesser gains nothing by knowing one.
 */
import { LoginThrottled } from "../../protocol/index.js";

/** Wrong keys one address may send per window. */
export const LOGIN_MAX_FAILURES = 10;
/** The window, ms. */
export const LOGIN_WINDOW_MS = 60_000;
/** Addresses tracked at most; past it, windows that ended are dropped first (then the oldest). */
const MAX_TRACKED_ADDRESSES = 10_000;

/** Failure counts of the dashboard login by client address. */
export class LoginThrottle {
  private readonly failures = new Map<string, { count: number; windowEndMs: number }>();

  /**
   * @param maxFailures - wrong keys allowed per window and address
   * @param windowMs - window length, ms
   * @param now - the clock, epoch ms
   */
  constructor(
    private readonly maxFailures = LOGIN_MAX_FAILURES,
    private readonly windowMs = LOGIN_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Refuses an address that used up its wrong keys in the current window.
   * @param address - the client's address
   * @throws {LoginThrottled} with the seconds until the window ends
   */
  check(address: string): void {
    const entry = this.failures.get(address);
    if (entry === undefined) return;
    const leftMs = entry.windowEndMs - this.now();
    if (leftMs <= 0) this.failures.delete(address);
    else if (entry.count >= this.maxFailures) throw new LoginThrottled(Math.ceil(leftMs / 1000));
  }

  /** Counts one wrong key from `address`. */
  recordFailure(address: string): void {
    const nowMs = this.now();
    const entry = this.failures.get(address);
    if (entry !== undefined && entry.windowEndMs > nowMs) {
      entry.count++;
      return;
    }
    if (this.failures.size >= MAX_TRACKED_ADDRESSES) this.prune(nowMs);
    this.failures.set(address, { count: 1, windowEndMs: nowMs + this.windowMs });
  }

  /** Drops ended windows; if every window is live, the oldest (Map order is insertion order). */
  private prune(nowMs: number): void {
    for (const [address, entry] of this.failures) if (entry.windowEndMs <= nowMs) this.failures.delete(address);
    if (this.failures.size >= MAX_TRACKED_ADDRESSES) {
      const oldest = this.failures.keys().next().value;
      if (oldest !== undefined) this.failures.delete(oldest);
    }
  }
}
