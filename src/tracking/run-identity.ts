/**
 * @module Which tracker runs a training run logs to, kept in `runs/NAME/tracking.json` so that `arclight train
 * --resume` continues the same W&B run and MLflow run instead of opening new ones.
 */
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeDirs } from "../fs/make-dirs.js";
import type { TrackingConfig } from "./config.js";

/** A W&B run: what `wandb.init(id=..., resume="allow")` needs to continue it. */
export interface WandbIdentity {
  run_id: string;
  /** The entity W&B answered (online) or the configured one (offline; may be empty). */
  entity: string;
  project: string;
}

/** An MLflow run. */
export interface MlflowIdentity {
  run_id: string;
  tracking_uri: string;
  experiment: string;
}

/** The tracker runs of one training run, by tool. */
export interface TrackerIdentities {
  wandb?: WandbIdentity;
  mlflow?: MlflowIdentity;
}

/** The file, in the run folder. */
export const IDENTITY_FILE = "tracking.json";

/**
 * Reads the tracker runs a run folder names.
 * @param runDir - `runs/NAME`
 * @returns them; empty when the file is missing or unreadable (the run then opens new tracker runs)
 */
export function readIdentities(runDir: string): TrackerIdentities {
  try {
    return JSON.parse(readFileSync(join(runDir, IDENTITY_FILE), "utf8")) as TrackerIdentities;
  } catch {
    return {};
  }
}

/**
 * Records one tool's run in the run folder (written to a temporary file, then renamed over the old one).
 * @param runDir - `runs/NAME` (made when missing)
 * @param tool - `wandb` or `mlflow`
 * @param identity - the run
 */
export function saveIdentity<T extends keyof TrackerIdentities>(
  runDir: string,
  tool: T,
  identity: NonNullable<TrackerIdentities[T]>,
): void {
  const all = { ...readIdentities(runDir), [tool]: identity };
  const path = join(runDir, IDENTITY_FILE);
  makeDirs(runDir);
  writeFileSync(`${path}.tmp`, `${JSON.stringify(all, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
}

/**
 * The tracker runs a resumed run continues: each recorded one whose project (W&B: project, and entity when one is
 * configured; MLflow: tracking URI and experiment) is still the configured one.
 * @param tracking - the config's `tracking` section now
 * @param recorded - what the run folder names
 * @returns the runs to continue, and one line for each recorded run that is not continued, saying why
 */
export function identitiesToResume(
  tracking: TrackingConfig,
  recorded: TrackerIdentities,
): { resume: TrackerIdentities; notes: string[] } {
  const resume: TrackerIdentities = {};
  const notes: string[] = [];
  const { wandb, mlflow } = recorded;
  if (wandb !== undefined && tracking.wandb.project !== "" && tracking.wandb.mode !== "disabled") {
    const { project, entity } = tracking.wandb;
    if (wandb.project === project && (entity === "" || entity === wandb.entity)) resume.wandb = wandb;
    else {
      const was = `${wandb.entity === "" ? "" : `${wandb.entity}/`}${wandb.project}`;
      notes.push(
        `W&B run ${wandb.run_id} was in ${was}, the config names ${entity === "" ? "" : `${entity}/`}${project}: starting a new W&B run`,
      );
    }
  }
  if (mlflow !== undefined && tracking.mlflow.tracking_uri !== "") {
    const { tracking_uri, experiment } = tracking.mlflow;
    if (mlflow.tracking_uri === tracking_uri && mlflow.experiment === experiment) resume.mlflow = mlflow;
    else {
      notes.push(
        `MLflow run ${mlflow.run_id} was in experiment ${mlflow.experiment} at ${mlflow.tracking_uri}, the config names ` +
          `${experiment} at ${tracking_uri}: starting a new MLflow run`,
      );
    }
  }
  return { resume, notes };
}
