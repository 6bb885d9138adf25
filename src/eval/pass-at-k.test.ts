import { describe, expect, it } from "vitest";
import { meanPassAtK, passAtK } from "./pass-at-k.js";

/** C(n, k) by the multiplicative formula, exact for the small values used here. */
function binomial(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let value = 1;
  for (let i = 1; i <= k; i++) value = (value * (n - k + i)) / i;
  return value;
}

describe("passAtK", () => {
  it("is the share of passing samples at k = 1", () => {
    expect(passAtK(10, 3, 1)).toBeCloseTo(0.3, 12);
    expect(passAtK(4, 0, 1)).toBe(0);
    expect(passAtK(4, 4, 1)).toBe(1);
  });

  it("matches 1 - C(n-c,k)/C(n,k) on hand-computed cases", () => {
    // n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10
    expect(passAtK(5, 2, 2)).toBeCloseTo(0.7, 12);
    // n=4, c=1, k=2: 1 - C(3,2)/C(4,2) = 1 - 3/6
    expect(passAtK(4, 1, 2)).toBeCloseTo(0.5, 12);
    for (const [n, c, k] of [
      [10, 1, 5],
      [20, 7, 3],
      [12, 0, 4],
      [9, 4, 9],
    ] as const) {
      expect(passAtK(n, c, k)).toBeCloseTo(1 - binomial(n - c, k) / binomial(n, k), 12);
    }
  });

  it("is 1 once fewer than k samples failed", () => {
    expect(passAtK(5, 4, 2)).toBe(1);
    expect(passAtK(3, 1, 3)).toBe(1);
  });

  it("stays finite where the binomials overflow", () => {
    // C(2000, 1000) is far beyond a double; the product form is not.
    const value = passAtK(2000, 1, 1000);
    expect(value).toBeCloseTo(0.5, 12);
  });

  it("refuses k above n, c above n and non-integers", () => {
    expect(() => passAtK(3, 1, 4)).toThrow(/k 4: expected an integer in 1\.\.3/);
    expect(() => passAtK(3, 4, 1)).toThrow(/c 4/);
    expect(() => passAtK(0, 0, 1)).toThrow(/n 0/);
    expect(() => passAtK(3, 1, 1.5)).toThrow(/k 1\.5/);
  });
});

describe("meanPassAtK", () => {
  it("averages the per-task estimates, not the pooled counts", () => {
    // Task A: 2 of 2 pass; task B: 0 of 2. pass@2 = (1 + 0) / 2; pooled counts would give 1 - C(2,2)/C(4,2) = 5/6.
    expect(
      meanPassAtK(
        [
          { n: 2, c: 2 },
          { n: 2, c: 0 },
        ],
        2,
      ),
    ).toBe(0.5);
    expect(meanPassAtK([], 1)).toBe(0);
  });
});
