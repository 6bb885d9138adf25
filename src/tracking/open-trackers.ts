/** @module The trackers a `tracking` config asks for, as one {@link TrackerSet}. */
import type { Logger } from "pino";
import type { TrackingConfig } from "./config.js";
import { MlflowTracker } from "./mlflow.js";
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
 * @returns the set; empty when nothing is configured
 */
export function openTrackers(config: TrackingConfig, runName: string, env: TrackingEnv, log?: Logger): TrackerSet {
  const trackers: Tracker[] = [];
  const { wandb, mlflow, tensorboard } = config;
  if (wandb.project !== "" && wandb.mode === "online") {
    const baseUrl = env.WANDB_BASE_URL ?? "https://api.wandb.ai";
    trackers.push(new WandbTracker(baseUrl, env.WANDB_API_KEY ?? "", wandb.project, wandb.entity, runName));
  }
  if (wandb.project !== "" && wandb.mode === "offline") {
    const dir = env.WANDB_DIR || process.cwd();
    trackers.push(new WandbOfflineTracker(dir, wandb.project, wandb.entity, runName));
  }
  if (mlflow.tracking_uri !== "") {
    const token = env.MLFLOW_TRACKING_TOKEN ?? "";
    trackers.push(new MlflowTracker(mlflow.tracking_uri, mlflow.experiment, runName, token, Date.now, log));
  }
  if (tensorboard.dir !== "") trackers.push(new TensorboardTracker(tensorboard.dir, runName));
  return new TrackerSet(trackers, log);
}
