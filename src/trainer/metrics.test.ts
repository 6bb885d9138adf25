import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../testing/temp-dir.js";
import { appendMetrics, meanTrainMetrics, truncateMetricsAfter } from "./metrics.js";

describe("metrics", () => {
  it("averages the engine metrics of a step's PPO updates, null without an update", () => {
    const m = { loss: 1, gradNorm: 2, entropy: 3, clipFraction: 0, approxKl: 0.5, tokens: 10 };
    expect(meanTrainMetrics([])).toBeNull();
    expect(meanTrainMetrics([m, { ...m, loss: 3, clipFraction: 0.5 }])).toEqual({ ...m, loss: 2, clipFraction: 0.25 });
  });

  it("leaves updates the engine skipped as non-finite out of the means", () => {
    const m = { loss: 1, gradNorm: 2, entropy: 3, clipFraction: 0, approxKl: 0.5, tokens: 10 };
    const skipped = { ...m, loss: Number.NaN, gradNorm: Number.POSITIVE_INFINITY, nonFiniteSkipped: true };
    expect(meanTrainMetrics([m, skipped])).toEqual(m);
    expect(meanTrainMetrics([skipped])).toBeNull();
  });

  it("appends JSON lines and a resumed run trims the steps after its checkpoint", () => {
    const path = join(tempDir("arclight-metrics-"), "run", "metrics.jsonl");
    for (const step of [1, 2, 3]) appendMetrics(path, { step, "reward/mean": step / 10 });
    truncateMetricsAfter(path, 2);
    const steps = readFileSync(path, "utf8")
      .trim()
      .split("\n")
      .map((line) => (JSON.parse(line) as { step: number }).step);
    expect(steps).toEqual([1, 2]);
  });
});
