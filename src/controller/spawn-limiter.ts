/** @module A token bucket limiting how fast the controller spawns agent processes. */

/** Allows `burst` spawns at once, refilled at `ratePerSecond`. */
export class SpawnLimiter {
  private tokens: number;
  private lastMs: number;

  /**
   * @param ratePerSecond - sustained spawns per second
   * @param burst - spawns allowed back to back when the bucket is full
   * @param now - clock in ms (injectable for tests)
   */
  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.lastMs = now();
  }

  /** Takes one token. @returns false when the bucket is empty (spawn later) */
  tryTake(): boolean {
    const nowMs = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((nowMs - this.lastMs) / 1000) * this.ratePerSecond);
    this.lastMs = nowMs;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** @returns ms until the next token is available (0 when one is) */
  msUntilNext(): number {
    const missing = 1 - this.tokens;
    return missing <= 0 ? 0 : Math.ceil((missing / this.ratePerSecond) * 1000);
  }
}
