/**
 * @module The console side of the metrics: a progress bar over the run's steps (cli-progress, only on a TTY) and a
 * compact table of each step's key metrics, with a column for every kind of excluded or dropped data.
 */
import { SingleBar } from "cli-progress";
import type { StepReporter } from "./loop.js";
import type { StepMetrics } from "./metrics.js";

/** Columns of the per-step table: header and metric key. */
const COLUMNS: readonly [string, string][] = [
  ["step", "step"],
  ["reward", "reward/mean"],
  ["±", "reward/std"],
  ["rew_all", "reward/all_rollouts_mean"],
  ["val", "val/reward_mean"],
  ["rows", "rows"],
  ["tokens", "tokens"],
  ["trunc", "truncated"],
  ["drop", "dropped"],
  ["mism", "mismatches"],
  ["0-adv", "zero_adv_groups"],
  ["no_call", "no_calls"],
  ["err", "error_calls"],
  ["incompl", "incomplete_calls"],
  ["malform", "malformed_events"],
  ["dedup", "deduped_calls"],
  ["lp_miss", "logprobs/missing_rows"],
  ["lp_drop", "logprobs/dropped_rows"],
  ["nonfin", "nonfinite_steps"],
  ["entropy", "entropy"],
  ["kl", "kl"],
  ["clip", "clip_fraction"],
  ["wait_s", "time/wait_s"],
  ["drain_s", "time/drain_s"],
  ["upd_s", "time/update_s"],
  ["carry", "async/carried_over"],
  ["stale", "staleness/max"],
];

function cell(value: number | null | undefined): string {
  if (value === null || value === undefined) return "-";
  return Number.isInteger(value) ? String(value) : value.toFixed(3);
}

/**
 * Formats one table line (or the header line) with fixed-width columns.
 * @param metrics - a step's metrics, or null for the header
 * @returns the line, no trailing newline
 */
export function tableLine(metrics: StepMetrics | null): string {
  return COLUMNS.map(([header, key]) => (metrics === null ? header : cell(metrics[key])).padStart(8)).join(" ");
}

/**
 * A reporter printing a table line per step, plus a progress bar when `stream` is a TTY.
 * @param stream - where to print (default process.stdout)
 * @returns the reporter to pass to `runTraining`
 */
export function consoleReporter(stream: NodeJS.WriteStream = process.stdout): StepReporter {
  const bar = stream.isTTY
    ? new SingleBar({ stream, format: "train [{bar}] {value}/{total} steps | {eta_formatted}" })
    : null;
  let started = false;
  return {
    onStep(metrics, totalSteps) {
      if (!started) {
        started = true;
        stream.write(`${tableLine(null)}\n`);
      }
      // The bar redraws its own line: print the table row above it.
      bar?.stop();
      stream.write(`${tableLine(metrics)}\n`);
      bar?.start(totalSteps, metrics.step ?? 0);
    },
    close() {
      bar?.stop();
    },
  };
}
