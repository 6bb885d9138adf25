/** @module A run's reward curves from metrics.jsonl, as runs/NAME/reward.svg and a terminal chart. */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type CurvePoint, renderSvgPlot } from "./svg-plot.js";
import { renderTextPlot } from "./text-plot.js";

/** The two curves of a run. */
export interface RewardCurves {
  train: CurvePoint[];
  val: CurvePoint[];
}

/**
 * `reward/mean` and `val/reward_mean` per step, sorted; a later line for a step replaces an earlier one.
 * @throws {Error} when the file cannot be read or a line is not JSON
 */
export function readRewardCurves(metricsPath: string): RewardCurves {
  const train = new Map<number, number>();
  const val = new Map<number, number>();
  for (const line of readFileSync(metricsPath, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    const record = JSON.parse(line) as Record<string, unknown>;
    if (typeof record.step !== "number") continue;
    if (typeof record["reward/mean"] === "number") train.set(record.step, record["reward/mean"]);
    if (typeof record["val/reward_mean"] === "number") val.set(record.step, record["val/reward_mean"]);
  }
  const points = (m: Map<number, number>) =>
    [...m].map(([step, value]) => ({ step, value })).sort((a, b) => a.step - b.step);
  return { train: points(train), val: points(val) };
}

/** Writes `runDir/reward.svg`, prints the character chart, and returns the SVG path. */
export function writeRewardPlots(runDir: string, curves: RewardCurves, out: NodeJS.WritableStream): string {
  const train = { label: "train reward (mean of rollouts)", color: "#1f77b4", points: curves.train };
  const val = { label: "val reward (greedy)", color: "#d62728", points: curves.val, dots: true };
  const svgPath = join(runDir, "reward.svg");
  writeFileSync(
    svgPath,
    renderSvgPlot([train, val], { title: "Calculator agent: reward during GRPO", xLabel: "step", yLabel: "reward" }),
  );
  const chart = renderTextPlot([
    { ...train, label: "train", marker: "*" },
    { ...val, label: "val", marker: "o" },
  ]);
  out.write(`\nreward curve (${svgPath})\n${chart}\n`);
  return svgPath;
}
