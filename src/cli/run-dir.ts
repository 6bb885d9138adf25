/**
 * @module What `arclight train` does with an existing `runs/NAME`: a run that trained (a step in metrics.jsonl or a
 * checkpoint) is continued with `--resume` or refused; one that stopped before its first step (a config error caught
 * once the run had started, an agent that cannot run) is moved aside, so a rerun with a fixed config starts afresh
 * instead of meeting that run's stored rollouts, which reuse the new run's ids.
 */
import { existsSync, readFileSync, renameSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { loadLatestCheckpoint } from "../trainer/checkpoint.js";
import { CliError } from "./cli-error.js";

/** What in runs/NAME shows an earlier run. */
const RUN_FILES = ["metrics.jsonl", "checkpoints", "gateway.db"];

/**
 * Whether the run in `runDir` completed a training step: a checkpoint, or a step line in metrics.jsonl (`step` ≥ 1;
 * a step-0 validation line alone is no step).
 */
function completedAStep(runDir: string): boolean {
  if (loadLatestCheckpoint(runDir) !== null) return true;
  const metrics = join(runDir, "metrics.jsonl");
  if (!existsSync(metrics)) return false;
  return readFileSync(metrics, "utf8")
    .split("\n")
    .some((line) => {
      try {
        const step = (JSON.parse(line) as { step?: unknown }).step;
        return typeof step === "number" && step >= 1;
      } catch {
        return false;
      }
    });
}

/** A sibling folder name for a run moved aside: `runs/NAME.failed-20261207T031500Z`, numbered if taken. */
function asideDir(runDir: string, now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  const base = join(dirname(runDir), `${basename(runDir)}.failed-${stamp}`);
  let dir = base;
  for (let n = 2; existsSync(dir); n++) dir = `${base}-${n}`;
  return dir;
}

/**
 * Readies `runDir` for a run. A fresh run must not reuse an earlier run's directory: its gateway already holds
 * rollouts with the ids this run would create, and its checkpoints and metrics would be overwritten.
 * 1. Nothing there: go on (with `--resume`, say that the run starts at step 0).
 * 2. A run that stopped before its first step: move it to `runs/NAME.failed-STAMP` (kept, for its logs) and go on,
 *    with or without `--resume`: there is nothing to continue, and its failed rollouts would replay its failure.
 * 3. A run that trained: `--resume` continues it; without, refuse.
 * @param runDir - `runs/NAME`, absolute
 * @param name - the run name, for messages
 * @param resume - `--resume` was given
 * @param now - the clock, for the moved folder's name
 * @throws {CliError} when runs/NAME holds a run that trained and `--resume` was not given
 */
export function prepareRunDir(runDir: string, name: string, resume: boolean, now = new Date()): void {
  const found = RUN_FILES.filter((file) => existsSync(join(runDir, file)));
  if (found.length > 0 && !completedAStep(runDir)) {
    const aside = asideDir(runDir, now);
    renameSync(runDir, aside);
    console.error(
      `arclight train: ${relative(process.cwd(), runDir)} held an earlier run that stopped before its first step; ` +
        `moved it to ${relative(process.cwd(), aside)} and starting afresh`,
    );
    return;
  }
  if (!resume && found.length > 0) {
    throw new CliError(
      `run ${name}: ${runDir} holds an earlier run (${found.join(", ")}); continue it with --resume, ` +
        "or set another name: in the config (or delete the folder)",
    );
  }
  if (resume && loadLatestCheckpoint(runDir) === null) {
    console.error(`arclight train: --resume: no checkpoint in ${runDir}; starting at step 0`);
  }
}
