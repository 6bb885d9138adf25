/** @module The demo's live reward table: one line per GRPO step under a progress bar. */
import { SingleBar } from "cli-progress";
import type { StepReporter } from "../trainer/loop.js";
import type { StepMetrics } from "../trainer/metrics.js";
import { formatEta, StepEta } from "../trainer/step-eta.js";

/** Columns: header, metric key, decimals. */
const COLUMNS: readonly [string, string, number][] = [
  ["step", "step", 0],
  ["train reward", "reward/mean", 3],
  ["val reward", "val/reward_mean", 3],
  ["entropy", "entropy", 3],
  ["rows", "rows", 0],
  ["update s", "time/update_s", 1],
  ["step s", "time/step_s", 1],
];

/** One fixed-width line of the table, or its header when `metrics` is null. */
export function rewardTableLine(metrics: StepMetrics | null): string {
  return COLUMNS.map(([header, key, decimals]) => {
    const value = metrics?.[key];
    const text = metrics === null ? header : value === null || value === undefined ? "-" : value.toFixed(decimals);
    return text.padStart(header.length + 2);
  }).join("");
}

/** A `runTraining` reporter printing the reward table, with a progress bar on a TTY. */
export function rewardTableReporter(stream: NodeJS.WriteStream = process.stdout, now = Date.now): StepReporter {
  const bar = stream.isTTY
    ? new SingleBar({ stream, format: "  GRPO [{bar}] {value}/{total} steps | ETA {eta}" })
    : null;
  const eta = new StepEta(now);
  stream.write(`${rewardTableLine(null)}\n`);
  return {
    onStep(metrics, totalSteps) {
      const step = metrics.step ?? 0;
      const left = formatEta(eta.onStep(step, totalSteps));
      bar?.stop();
      stream.write(`${rewardTableLine(metrics)}  ETA ${left}\n`);
      if (step < totalSteps) bar?.start(totalSteps, step, { eta: left });
    },
    close() {
      bar?.stop();
    },
  };
}
