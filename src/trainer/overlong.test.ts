import { describe, expect, it } from "vitest";
import { overlongPenalty } from "./overlong.js";

describe("overlong reward shaping (DAPO eq. 13)", () => {
  const shaping = { maxLength: 20, buffer: 4, factor: 1 };

  it("is 0 up to L_max − L_cache, linear through the buffer, −factor past L_max", () => {
    expect(overlongPenalty(16, shaping)).toBe(0);
    expect(overlongPenalty(17, shaping)).toBeCloseTo(-0.25);
    expect(overlongPenalty(18, shaping)).toBeCloseTo(-0.5);
    expect(overlongPenalty(20, shaping)).toBeCloseTo(-1);
    expect(overlongPenalty(21, shaping)).toBe(-1);
    expect(overlongPenalty(18, { ...shaping, factor: 0.5 })).toBeCloseTo(-0.25);
  });

  it("refuses a buffer that is not below the maximum length", () => {
    expect(() => overlongPenalty(5, { maxLength: 4, buffer: 4, factor: 1 })).toThrow(RangeError);
  });
});
