/** @module Tests of the console table: it fits 100 columns, sums the exclusions, and shows the time left. */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { consoleReporter, ISSUE_KEYS, tableLine } from "./console-report.js";
import { formatEta, StepEta } from "./step-eta.js";

describe("console table", () => {
  it("fits a 100-column terminal with its time-left note", () => {
    const metrics = Object.fromEntries(ISSUE_KEYS.map((key) => [key, 1_000_000]));
    const line = tableLine({ ...metrics, step: 100_000, "reward/mean": -0.123456, tokens: 1_234_567, kl: 1.5e-5 });
    expect(`${line}  ETA 23h59m`.length).toBeLessThanOrEqual(100);
  });

  it("sums every kind of exclusion in one issues column, - for a value not measured, small values kept", () => {
    const header = tableLine(null).trim().split(/\s+/);
    const line = tableLine({ step: 1, no_calls: 2, error_calls: 1, truncated: 4, "reward/mean": null, kl: 1.5e-5 })
      .trim()
      .split(/\s+/);
    expect(line[header.indexOf("issues")]).toBe("7");
    expect(line[header.indexOf("reward")]).toBe("-");
    expect(line[header.indexOf("kl")]).toBe("1.5e-5");
  });

  it("prints each step's row with the time left from the mean step time", () => {
    let nowMs = 0;
    const out = new PassThrough();
    let text = "";
    out.on("data", (chunk: Buffer) => {
      text += chunk.toString();
    });
    const reporter = consoleReporter(out as unknown as NodeJS.WriteStream, () => nowMs);
    nowMs = 30_000; // startup and step 1: 30 s
    reporter.onStep({ step: 1 }, 5);
    nowMs = 50_000; // step 2: 20 s
    reporter.onStep({ step: 2 }, 5);
    nowMs = 70_000;
    reporter.onStep({ step: 3 }, 5);
    reporter.close();
    expect(text.split("\n").map((line) => /ETA (\S+)$/.exec(line)?.[1])).toEqual([
      undefined,
      undefined,
      "2m00s", // 4 steps left at 30 s
      "1m00s", // 3 steps left at 20 s
      "40s",
      undefined,
    ]);
  });
});

describe("StepEta", () => {
  it("counts a resumed run's steps from its first reported step", () => {
    let nowMs = 1000;
    const eta = new StepEta(() => nowMs);
    nowMs = 11_000;
    expect(eta.onStep(40, 50)).toBe(100_000);
    nowMs = 16_000;
    expect(eta.onStep(41, 50)).toBe(45_000);
    expect(formatEta(45_000)).toBe("45s");
    expect(formatEta(7_620_000)).toBe("2h07m");
  });
});
