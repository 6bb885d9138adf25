import { describe, expect, it } from "vitest";
import { tickLabels } from "./axis-labels.js";

describe("tickLabels", () => {
  it("labels ticks of a metric of size 1e-5 (kl) apart, with no -0", () => {
    expect(tickLabels([-1e-5, -1e-21, 1e-5, 2e-5], 1e-5)).toEqual(["-1e-5", "0", "1e-5", "2e-5"]);
    expect(tickLabels([2.5e-6, 5e-6, 7.5e-6, 1.25e-5], 2.5e-6)).toEqual(["2.5e-6", "5e-6", "7.5e-6", "1.25e-5"]);
    expect(tickLabels([-0.0004, 0, 0.0004], 0.0002)).toEqual(["-4e-4", "0", "4e-4"]);
  });

  it("uses the step's decimals in fixed notation, and exponents for huge steps", () => {
    expect(tickLabels([-0.5, -5.551115123125783e-17, 0.5, 1], 0.5)).toEqual(["-0.5", "0", "0.5", "1.0"]);
    expect(tickLabels([0.25, 0.5, 0.75], 0.25)).toEqual(["0.25", "0.50", "0.75"]);
    expect(tickLabels([0.001, 0.002, null], 0.001)).toEqual(["0.001", "0.002", ""]);
    expect(tickLabels([20, 40, 60], 20)).toEqual(["20", "40", "60"]);
    expect(tickLabels([2e6, 4e6], 2e6)).toEqual(["2e6", "4e6"]);
  });
});
