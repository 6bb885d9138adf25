/**
 * @module Finished runs for the dashboard: reads `DIR/NAME/metrics.jsonl` (the file `arclight train` and
 * `arclight demo` append one step per line to) into a {@link RunRegistry}, so a run's curves stay viewable after the
 * run, and its gateway child, have ended (`arclight gateway --store sqlite:runs/NAME/gateway.db --runs-dir runs`).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { type RunStep, RunStepSchema } from "../../protocol/index.js";
import type { RunRegistry } from "./run-registry.js";

/** What {@link loadRunsDir} found. */
export interface RunsDirLoad {
  /** Runs loaded (folders with a `metrics.jsonl`). */
  runs: number;
  /** Steps loaded, over all runs. */
  steps: number;
  /** Lines skipped: not JSON, or not a step record (a line cut short by a crash, say). */
  skippedLines: number;
}

/**
 * Loads every `NAME/metrics.jsonl` under `dir` as run NAME (config `{}`, planned length unknown), each run's
 * `updated_at` being its file's modification time. A run name the dashboard already has is replaced.
 * @param registry - where the runs go
 * @param dir - a folder of run folders, e.g. `runs`
 * @returns counts of what was loaded and skipped
 * @throws {Error} when `dir` cannot be read (missing, not a folder): a startup error naming the folder
 */
export function loadRunsDir(registry: RunRegistry, dir: string): RunsDirLoad {
  let names: string[];
  try {
    names = readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
  } catch (err) {
    throw new Error(`runs_dir ${dir}: cannot read the folder (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  const load: RunsDirLoad = { runs: 0, steps: 0, skippedLines: 0 };
  for (const name of names) {
    const path = join(dir, name, "metrics.jsonl");
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch {
      continue;
    }
    const { steps, skipped } = parseSteps(text);
    const modifiedS = statSync(path).mtimeMs / 1000;
    registry.upsert(name, { config: {}, total_steps: null }, modifiedS);
    if (steps.length > 0) registry.appendSteps(name, steps, modifiedS);
    load.runs += 1;
    load.steps += steps.length;
    load.skippedLines += skipped;
  }
  return load;
}

/** The step records of a metrics.jsonl text, and how many non-empty lines were not one. */
function parseSteps(text: string): { steps: RunStep[]; skipped: number } {
  const steps: RunStep[] = [];
  let skipped = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      skipped += 1;
      continue;
    }
    const step = RunStepSchema.safeParse(value);
    if (step.success) steps.push(step.data);
    else skipped += 1;
  }
  return { steps, skipped };
}
