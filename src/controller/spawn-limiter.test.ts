import { describe, expect, it } from "vitest";
import { SpawnLimiter } from "./spawn-limiter.js";

describe("SpawnLimiter", () => {
  it("allows a burst, then one spawn per 1/rate seconds", () => {
    let nowMs = 0;
    const limiter = new SpawnLimiter(10, 3, () => nowMs);
    expect([limiter.tryTake(), limiter.tryTake(), limiter.tryTake(), limiter.tryTake()]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(limiter.msUntilNext()).toBe(100);
    nowMs = 50;
    expect(limiter.tryTake()).toBe(false);
    nowMs = 100;
    expect(limiter.tryTake()).toBe(true);
    nowMs = 10_000; // a long idle refills only up to the burst
    expect([limiter.tryTake(), limiter.tryTake(), limiter.tryTake(), limiter.tryTake()]).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });

  it("charge() counts a spawn made without a token: the bucket goes into debt and later spawns wait it out", () => {
    let nowMs = 0;
    const limiter = new SpawnLimiter(10, 1, () => nowMs);
    expect(limiter.tryTake()).toBe(true);
    limiter.charge(); // one token of debt
    expect(limiter.msUntilNext()).toBe(200);
    nowMs = 100;
    expect(limiter.tryTake()).toBe(false);
    nowMs = 200;
    expect(limiter.tryTake()).toBe(true);
  });
});
