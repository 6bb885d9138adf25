/**
 * @module Feeds a training run to its experiment trackers as a {@link StepReporter}: every step's metrics, each
 * validation pass as a table (one row per rollout), and each checkpoint's path (the last one is the final path).
 */
import type { TrackerSet } from "../tracking/tracker.js";
import type { StepReporter } from "./loop.js";
import type { StepMetrics } from "./metrics.js";
import type { ValidationRow } from "./validation.js";

/** Characters of an input shown in a validation table cell. */
const INPUT_CELL_CHARS = 300;

/**
 * The validation table of one pass.
 * @param rows - the pass's rollouts
 * @returns columns `rollout_id`, `data_index`, `input` (JSON, cut to 300 characters), `reward`, `failed`
 */
export function validationTable(rows: readonly ValidationRow[]) {
  return {
    columns: ["rollout_id", "data_index", "input", "reward", "failed"],
    rows: rows.map((row) => {
      const input = typeof row.input === "string" ? row.input : JSON.stringify(row.input);
      const cell = input.length > INPUT_CELL_CHARS ? `${input.slice(0, INPUT_CELL_CHARS - 1)}…` : input;
      return [row.rolloutId, row.dataIndex, cell, row.reward, row.failed];
    }),
  };
}

/**
 * A reporter writing to `trackers`; it never throws (the set turns a failing tracker off).
 * @param trackers - the run's trackers, already started with the config
 */
export function trackingReporter(trackers: TrackerSet): StepReporter {
  return {
    onStep: (metrics: StepMetrics) => trackers.logMetrics(metrics.step ?? 0, metrics),
    onValidation: (step, rows) => trackers.logTable("validation/rollouts", step, validationTable(rows)),
    onCheckpoint: (_step, dir) => trackers.logSummary("checkpoint_path", dir),
    close: () => {},
  };
}
