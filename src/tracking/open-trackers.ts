/** @module The trackers a `tracking` config asks for, as one {@link TrackerSet}. */
import type { Logger } from "pino";
import type { TrackingConfig } from "./config.js";
import { MlflowTracker } from "./mlflow.js";
import type { TrackerIdentities } from "./run-identity.js";
import { TensorboardTracker } from "./tensorboard.js";
import { type Tracker, TrackerSet } from "./tracker.js";
import { WandbTracker } from "./wandb.js";
import { WandbOfflineTracker } from "./wandb-offline.js";

/** The environment variables the trackers read (W&B's and MLflow's own names). */
export interface TrackingEnv {
  WANDB_API_KEY?: string;
  WANDB_BASE_URL?: string;
  MLFLOW_TRACKING_TOKEN?: string;
  /** The folder that gets W&B's `wandb/` run folders in offline mode (W&B's own variable); default: the cwd. */
  WANDB_DIR?: string;
}

/**
 * Opens the trackers of a run: W&B when `wandb.project` is set and its mode is online (HTTP API) or offline (a run
 * folder for `wandb sync`), MLflow when
 * `mlflow.tracking_uri` is set, TensorBoard when `tensorboard.dir` is set.
 * @param config - the `tracking` section
 * @param runName - the run's name (TensorBoard's subfolder, MLflow's `runName`, W&B's display name)
 * @param env - API keys and the W&B base URL
 * @param log - where a failing tracker is reported (once each)
 * @param run - the run folder, where each tracker's run is recorded (`tracking.json`), and the recorded runs to
 *   continue (`--resume`); omitted: new runs, recorded nowhere
 * @returns the set; empty when nothing is configured
 */
export function openTrackers(
  config: TrackingConfig,
  runName: string,
  env: TrackingEnv,
  log?: Logger,
  run?: { dir: string; resume: TrackerIdentities },
): TrackerSet {
  const trackers: Tracker[] = [];
  const { wandb, mlflow, tensorboard } = config;
  const resume = run?.resume ?? {};
  if (wandb.project !== "" && wandb.mode === "online") {
    const baseUrl = env.WANDB_BASE_URL ?? "https://api.wandb.ai";
    const key = env.WANDB_API_KEY ?? "";
    trackers.push(new WandbTracker(baseUrl, key, wandb.project, wandb.entity, runName, Date.now, resume.wandb ?? null));
  }
  if (wandb.project !== "" && wandb.mode === "offline") {
    const dir = env.WANDB_DIR || process.cwd();
    trackers.push(new WandbOfflineTracker(dir, wandb.project, wandb.entity, runName, Date.now, resume.wandb ?? null));
  }
  if (mlflow.tracking_uri !== "") {
    const token = env.MLFLOW_TRACKING_TOKEN ?? "";
    const { tracking_uri, experiment } = mlflow;
    trackers.push(new MlflowTracker(tracking_uri, experiment, runName, token, Date.now, log, resume.mlflow ?? null));
  }
  // TensorBoard needs nothing recorded: a resumed run writes a new event file in the same `<dir>/<run name>/`.
  if (tensorboard.dir !== "") trackers.push(new TensorboardTracker(tensorboard.dir, runName));
  return new TrackerSet(trackers, log, run?.dir);
}
