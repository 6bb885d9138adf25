/** @module A token bucket limiting how fast the controller spawns agent processes. */

/** Allows `burst` spawns at once, refilled at `ratePerSecond`. */
export class SpawnLimiter {
  private tokens: number;
  private lastMs: number;

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
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Counts a spawn made without a token (an expected idle runner had died): the bucket goes into debt. */
  charge(): void {
    this.refill();
    this.tokens -= 1;
  }

  private refill(): void {
    const nowMs = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((nowMs - this.lastMs) / 1000) * this.ratePerSecond);
    this.lastMs = nowMs;
  }

  /** @returns ms until the next token is available (0 when one is) */
  msUntilNext(): number {
    const missing = 1 - this.tokens;
    return missing <= 0 ? 0 : Math.ceil((missing / this.ratePerSecond) * 1000);
  }
}
