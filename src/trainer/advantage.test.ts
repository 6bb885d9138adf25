import { describe, expect, it } from "vitest";
import { grpoAdvantages, isZeroVariance, mean, reinforceAdvantages, rlooAdvantages, sampleStd } from "./advantage.js";

describe("grpoAdvantages", () => {
  it("subtracts the group mean and divides by the unbiased std plus 1e-6", () => {
    // mean 0.5; std = sqrt(4 · 0.25 / 3) = 0.5773503; 0.5 / 0.5773513 = 0.8660239
    const advantages = grpoAdvantages([1, 0, 0, 1], true);
    expect(advantages[0]).toBeCloseTo(0.8660239, 6);
    expect(advantages[1]).toBeCloseTo(-0.8660239, 6);
    expect(advantages[2]).toBeCloseTo(-0.8660239, 6);
    expect(advantages[3]).toBeCloseTo(0.8660239, 6);
  });

  it("keeps only the mean baseline without std normalisation", () => {
    // mean of [2, 0, 1] is 1
    expect(grpoAdvantages([2, 0, 1], false)).toEqual([1, -1, 0]);
  });

  it("gives all zeros to a zero-variance group and to a group of one", () => {
    expect(grpoAdvantages([0.7, 0.7, 0.7], true)).toEqual([0, 0, 0]);
    expect(grpoAdvantages([3], true)).toEqual([0]);
  });

  it("rejects an empty group", () => {
    expect(() => grpoAdvantages([], true)).toThrow(RangeError);
  });
});

describe("rlooAdvantages", () => {
  it("subtracts the mean of the other rollouts' rewards", () => {
    // r0: 1 − (0+0+0)/3 = 1; r1: 0 − (1+0+0)/3 = −1/3
    const advantages = rlooAdvantages([1, 0, 0, 0]);
    expect(advantages[0]).toBe(1);
    for (const a of advantages.slice(1)) expect(a).toBeCloseTo(-1 / 3, 12);
    // r0: 3 − (1+2)/2 = 1.5; r1: 1 − (3+2)/2 = −1.5; r2: 2 − (3+1)/2 = 0
    expect(rlooAdvantages([3, 1, 2])).toEqual([1.5, -1.5, 0]);
  });

  it("gives zeros to a zero-variance group and to a group of one", () => {
    expect(rlooAdvantages([1, 1])).toEqual([0, 0]);
    expect(rlooAdvantages([1])).toEqual([0]);
  });
});

describe("reinforceAdvantages", () => {
  it("subtracts the batch mean, or nothing", () => {
    expect(reinforceAdvantages([1, 1, 0, 0], "batch_mean")).toEqual([0.5, 0.5, -0.5, -0.5]);
    expect(reinforceAdvantages([1, 1, 0, 0], "none")).toEqual([1, 1, 0, 0]);
    expect(reinforceAdvantages([], "batch_mean")).toEqual([]);
  });
});

describe("statistics", () => {
  it("computes mean, unbiased std and zero variance", () => {
    expect(mean([1, 2, 3, 6])).toBe(3);
    // squares 4 + 1 + 0 + 9 = 14, / 3
    expect(sampleStd([1, 2, 3, 6])).toBeCloseTo(Math.sqrt(14 / 3), 12);
    expect(sampleStd([5])).toBe(0);
    expect(isZeroVariance([2, 2])).toBe(true);
    expect(isZeroVariance([2, 2.5])).toBe(false);
    expect(() => mean([])).toThrow(RangeError);
  });
});
