/**
 * @module The console side of the metrics: a progress bar over the run's steps (cli-progress, only on a TTY) and a
 * table of each step's key metrics that fits a 100-column terminal; every metric of a step, each kind of excluded
 * data apart, is in `runs/NAME/metrics.jsonl`.
 */
import { SingleBar } from "cli-progress";
import type { StepReporter } from "./loop.js";
import type { StepMetrics } from "./metrics.js";
import { formatEta, StepEta } from "./step-eta.js";

/** Counts of data left out of a step or cut short, summed in the table's `issues` column. */
export const ISSUE_KEYS: readonly string[] = [
  "truncated",
  "dropped",
  "mismatches",
  "no_calls",
  "error_calls",
  "incomplete_calls",
  "malformed_events",
  "logprobs/dropped_rows",
  "nonfinite_steps",
];

/** Columns of the per-step table: header and metric key (`issues`: the sum of {@link ISSUE_KEYS}). */
const COLUMNS: readonly [string, string][] = [
  ["step", "step"],
  ["reward", "reward/mean"],
  ["±", "reward/std"],
  ["val", "val/reward_mean"],
  ["rows", "rows"],
  ["tokens", "tokens"],
  ["0-adv", "zero_adv_groups"],
  ["issues", "issues"],
  ["entropy", "entropy"],
  ["kl", "kl"],
  ["step_s", "time/step_s"],
];
/** Characters per column, its separating space included. */
const COLUMN_WIDTH = 8;

function cell(value: number | null | undefined): string {
  if (value === null || value === undefined) return "-";
  if (Number.isInteger(value)) return String(value);
  // Small values (kl ~1e-5) keep their size: 1.2e-5, not 0.000.
  return Math.abs(value) < 0.001 && value !== 0 ? value.toExponential(1) : value.toFixed(3);
}

/** The sum of a step's {@link ISSUE_KEYS}; undefined when it records none of them. */
function issuesOf(metrics: StepMetrics): number | undefined {
  const counts = ISSUE_KEYS.map((key) => metrics[key]).filter((v): v is number => typeof v === "number");
  return counts.length === 0 ? undefined : counts.reduce((sum, v) => sum + v, 0);
}

/**
 * Formats one table line (or the header line) with fixed-width columns: 88 characters.
 * @param metrics - a step's metrics, or null for the header
 * @returns the line, no trailing newline
 */
export function tableLine(metrics: StepMetrics | null): string {
  return COLUMNS.map(([header, key]) => {
    if (metrics === null) return header.padStart(COLUMN_WIDTH);
    const value = key === "issues" ? issuesOf(metrics) : metrics[key];
    return cell(value).padStart(COLUMN_WIDTH);
  }).join("");
}

/**
 * A reporter printing a table line per step with the time left, plus a progress bar when `stream` is a TTY.
 * @param stream - where to print (default process.stdout)
 * @param now - the clock, ms
 * @returns the reporter to pass to `runTraining`
 */
export function consoleReporter(stream: NodeJS.WriteStream = process.stdout, now = Date.now): StepReporter {
  const bar = stream.isTTY
    ? new SingleBar({ stream, format: "train [{bar}] {value}/{total} steps | ETA {eta}" })
    : null;
  const eta = new StepEta(now);
  let started = false;
  return {
    onStep(metrics, totalSteps) {
      if (!started) {
        started = true;
        stream.write(`every metric of each step, each kind of issue apart: metrics.jsonl\n${tableLine(null)}\n`);
      }
      const step = metrics.step ?? 0;
      const left = formatEta(eta.onStep(step, totalSteps));
      // The bar redraws its own line: print the table row above it.
      bar?.stop();
      stream.write(`${tableLine(metrics)}  ETA ${left}\n`);
      if (step < totalSteps) bar?.start(totalSteps, step, { eta: left });
    },
    close() {
      bar?.stop();
    },
  };
}
