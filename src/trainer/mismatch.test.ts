import { describe, expect, it } from "vitest";
import { truncatedIsWeights } from "./loss-weights.js";
import { correctRow, type MismatchSettings, mismatchStats } from "./mismatch.js";

const settings = (over: Partial<MismatchSettings>): MismatchSettings => ({
  isLevel: "token",
  isCap: 2,
  maskLevel: "none",
  maskLow: 0.5,
  maskHigh: 2,
  ...over,
});

// Hand-computed fixture: mask [0, 1, 1, 1, 1]; sampler logprobs [_, -1, -2, null, -0.5]; π_old [_, -1.693147, -0.613706,
// -3, -0.5] → ratios r = [0.5, 4, unknown, 1] (log −0.693147, 1.386294, −, 0).
const recorded = [null, -1, -2, null, -0.5];
const proximal = [-9, -1 - Math.LN2, -2 + 2 * Math.LN2, -3, -0.5];
const mask = [0, 1, 1, 1, 1];

describe("correctRow", () => {
  it("token TIS: min(r, C), 1 off the mask and where the sampler's logprob is unknown (as truncatedIsWeights)", () => {
    const out = correctRow(recorded, proximal, mask, settings({}));
    expect(out.isWeights.map((w) => +w.toFixed(6))).toEqual([1, 0.5, 2, 1, 1]);
    expect(out.cappedTokens).toBe(1);
    expect(out.unknownTokens).toBe(1);
    expect(out.isWeights).toEqual(truncatedIsWeights(recorded, proximal, mask, 2).isWeights);
  });

  it("sequence TIS: every known token gets min(Π r, C) = min(0.5·4·1, 2) = 2", () => {
    const out = correctRow(recorded, proximal, mask, settings({ isLevel: "sequence", isCap: 3 }));
    expect(out.isWeights.map((w) => +w.toFixed(6))).toEqual([1, 2, 2, 1, 2]);
    expect(correctRow(recorded, proximal, mask, settings({ isLevel: "sequence", isCap: 1.5 })).cappedTokens).toBe(3);
  });

  it("token mask drops tokens outside [0.6, 3]: r = 0.5 and r = 4", () => {
    const out = correctRow(recorded, proximal, mask, settings({ maskLevel: "token", maskLow: 0.6, maskHigh: 3 }));
    expect(out.isWeights.map((w) => +w.toFixed(6))).toEqual([1, 0, 0, 1, 1]);
    expect(out.maskedTokens).toBe(2);
  });

  it("sequence mask uses the geometric mean (0.5·4·1)^(1/3) = 1.26: kept in [0.8, 1.3], dropped from [0.8, 1.25]", () => {
    const kept = correctRow(
      recorded,
      proximal,
      mask,
      settings({ isLevel: "none", maskLevel: "sequence", maskLow: 0.8, maskHigh: 1.3 }),
    );
    expect(kept.rowMasked).toBe(false);
    expect(kept.isWeights).toEqual([1, 1, 1, 1, 1]);
    const dropped = correctRow(
      recorded,
      proximal,
      mask,
      settings({ isLevel: "none", maskLevel: "sequence", maskLow: 0.8, maskHigh: 1.25 }),
    );
    expect(dropped.rowMasked).toBe(true);
    expect(dropped.isWeights).toEqual([1, 0, 0, 1, 0]);
    expect(dropped.maskedTokens).toBe(3);
  });

  it("refuses a cap below 1 and an empty band", () => {
    expect(() => correctRow([], [], [], settings({ isCap: 0.5 }))).toThrow(RangeError);
    expect(() => correctRow([], [], [], settings({ maskLow: 1.5 }))).toThrow(/mask band/);
  });
});

describe("mismatchStats", () => {
  it("reports k3 KL, ratio quantiles and the masked fraction over tokens with both logprobs", () => {
    const rows = [correctRow(recorded, proximal, mask, settings({ maskLevel: "token", maskLow: 0.6, maskHigh: 3 }))];
    const stats = mismatchStats(rows);
    // k3 = r − 1 − log r: 0.5 → 0.193147, 4 → 1.613706, 1 → 0; mean 0.602284.
    expect(stats.kl).toBeCloseTo((0.5 - 1 + Math.LN2 + (4 - 1 - 2 * Math.LN2)) / 3, 9);
    expect(stats.ratioP50).toBeCloseTo(1, 9);
    // Sorted ratios [0.5, 1, 4]: p05 at 0.1 → 0.55; p95 at 1.9 → 1 + 0.9·3 = 3.7.
    expect(stats.ratioP05).toBeCloseTo(0.55, 9);
    expect(stats.ratioP95).toBeCloseTo(3.7, 9);
    expect(stats.maskedFraction).toBeCloseTo(2 / 3, 9);
    expect(stats.unknownTokens).toBe(1);
    expect(mismatchStats([]).kl).toBeNull();
  });
});
