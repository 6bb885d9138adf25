import { describe, expect, it } from "vitest";
import { parseRetryAfterMs, RetryBudget } from "./upstream.js";

describe("RetryBudget", () => {
  it("allows the floor plus ratio × first tries per window, per endpoint", () => {
    const budget = new RetryBudget({ ratio: 0.2, minRetries: 2, windowMs: 10_000 });
    for (let i = 0; i < 10; i++) budget.recordRequest("a", 1000);
    const allowed = Array.from({ length: 10 }, () => budget.tryRetry("a", 1000)).filter(Boolean).length;
    expect(allowed).toBe(4); // 2 + 0.2 × 10
    expect(budget.tryRetry("b", 1000)).toBe(true); // another endpoint has its own budget
  });

  it("frees the budget once the window has passed", () => {
    const budget = new RetryBudget({ ratio: 0, minRetries: 1, windowMs: 1000 });
    expect(budget.tryRetry("a", 0)).toBe(true);
    expect(budget.tryRetry("a", 500)).toBe(false);
    expect(budget.tryRetry("a", 1001)).toBe(true);
  });
});

describe("parseRetryAfterMs", () => {
  it("reads seconds and HTTP dates, and nothing else", () => {
    expect(parseRetryAfterMs("30")).toBe(30_000);
    expect(parseRetryAfterMs("Wed, 21 Oct 2015 07:28:10 GMT", Date.parse("Wed, 21 Oct 2015 07:28:00 GMT"))).toBe(
      10_000,
    );
    expect(parseRetryAfterMs(undefined)).toBeNull();
    expect(parseRetryAfterMs("soon")).toBeNull();
    expect(parseRetryAfterMs(["5", "7"])).toBe(5000);
  });
});
