import { describe, expect, it } from "vitest";
import { CliError } from "./cli-error.js";
import { type EvalFlags, samplingOf } from "./eval-flags.js";

const flags = (extra: Partial<EvalFlags>): EvalFlags => ({
  split: "val",
  samples: "1",
  logLevel: "warn",
  set: [],
  ...extra,
});

describe("samplingOf", () => {
  it("takes any finite --threshold, negative included", () => {
    expect(samplingOf(flags({ threshold: "0.9" })).threshold).toBe(0.9);
    expect(samplingOf(flags({ threshold: "-1" })).threshold).toBe(-1);
  });

  it("refuses a --threshold that is not a number, naming the flag and no bound", () => {
    expect(() => samplingOf(flags({ threshold: "abc" }))).toThrow(new CliError("--threshold abc: expected a number"));
    expect(() => samplingOf(flags({ threshold: "Infinity" }))).toThrow(
      new CliError("--threshold Infinity: expected a number"),
    );
  });

  it("refuses a negative --temperature, naming its bound", () => {
    expect(() => samplingOf(flags({ temperature: "-1" }))).toThrow(
      new CliError("--temperature -1: expected a number >= 0"),
    );
  });
});
