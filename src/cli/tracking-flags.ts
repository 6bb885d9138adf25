/**
 * @module The experiment-tracking flags of `arclight train`, `sft`, `apo` and `demo` (`--tensorboard-dir`,
 * `--mlflow-tracking-uri`, `--mlflow-experiment`, `--wandb-project`, `--wandb-entity`, `--wandb-mode`), and the trackers
 * a command opens.
 */
import type { Command } from "commander";
import type { Logger } from "pino";
import type { TrackingConfig } from "../tracking/config.js";
import { openTrackers } from "../tracking/open-trackers.js";
import { identitiesToResume, readIdentities } from "../tracking/run-identity.js";
import type { TrackerSet } from "../tracking/tracker.js";

/** The tracking flags as commander hands them over. */
export interface TrackingFlags {
  tensorboardDir?: string;
  mlflowTrackingUri?: string;
  mlflowExperiment?: string;
  wandbProject?: string;
  wandbEntity?: string;
  wandbMode?: string;
}

/** Flag → `tracking` key it sets. */
const FLAG_KEYS: readonly [keyof TrackingFlags, "tensorboard" | "mlflow" | "wandb", string][] = [
  ["tensorboardDir", "tensorboard", "dir"],
  ["mlflowTrackingUri", "mlflow", "tracking_uri"],
  ["mlflowExperiment", "mlflow", "experiment"],
  ["wandbProject", "wandb", "project"],
  ["wandbEntity", "wandb", "entity"],
  ["wandbMode", "wandb", "mode"],
];

/**
 * Adds the tracking flags to a command.
 * @param command - `train`, `sft`, `apo` or `demo`
 * @returns the same command
 */
export function addTrackingOptions(command: Command): Command {
  return command
    .option("--tensorboard-dir <dir>", "write TensorBoard event files to DIR/<run name> (tracking.tensorboard.dir)")
    .option("--mlflow-tracking-uri <url>", "log to this MLflow tracking server (tracking.mlflow.tracking_uri)")
    .option("--mlflow-experiment <name>", "MLflow experiment (tracking.mlflow.experiment)")
    .option("--wandb-project <name>", "log to this W&B project; key WANDB_API_KEY (tracking.wandb.project)")
    .option("--wandb-entity <name>", "W&B entity (tracking.wandb.entity)")
    .option("--wandb-mode <mode>", "online, offline (a run folder for `wandb sync`) or disabled (tracking.wandb.mode)");
}

/**
 * Sets the `tracking` keys the flags name in a raw config (before it is parsed), as text.
 * @param raw - the config as read from YAML (and `--set`); not modified
 * @param flags - the command's flags
 * @returns a copy with the flags applied
 */
export function applyTrackingFlags(raw: Record<string, unknown>, flags: TrackingFlags): Record<string, unknown> {
  const out = structuredClone(raw);
  for (const [flag, tool, key] of FLAG_KEYS) {
    const value = flags[flag];
    if (value === undefined) continue;
    out.tracking ??= {};
    const tracking = out.tracking as Record<string, Record<string, unknown>>;
    tracking[tool] = { ...tracking[tool], [key]: value };
  }
  return out;
}

/**
 * Opens the trackers a config asks for, reading W&B's and MLflow's keys from the environment, and starts their runs
 * with the config. Prints which tools are logged to.
 * @param command - the command name, for the printed line
 * @param tracking - the config's `tracking` section
 * @param runName - the run's name
 * @param config - the whole config, recorded by every tracker
 * @param log - where a failing tracker is reported
 * @param run - the run folder, where the tracker runs are recorded, and whether this command resumes the run
 *   recorded there (each tracker run in the configured project is continued; a line says why another is not)
 */
export function startTrackers(
  command: string,
  tracking: TrackingConfig,
  runName: string,
  config: Record<string, unknown>,
  log?: Logger,
  run?: { dir: string; resume: boolean },
): TrackerSet {
  const { resume, notes } = run?.resume
    ? identitiesToResume(tracking, readIdentities(run.dir))
    : { resume: {}, notes: [] };
  for (const note of notes) console.log(`arclight ${command}: ${note}`);
  const trackers = openTrackers(tracking, runName, process.env, log, run && { dir: run.dir, resume });
  if (trackers.tools().length > 0) console.log(`arclight ${command}: tracking to ${trackers.tools().join(", ")}`);
  trackers.start(config);
  return trackers;
}
