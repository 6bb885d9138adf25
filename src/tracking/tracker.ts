/**
 * @module The experiment-tracker interface (W&B, MLflow, TensorBoard) and {@link TrackerSet}, which feeds every
 * tracker in the background: a tracker that fails logs one warning, is turned off, and never stops the run.
 */
import type { Logger } from "pino";
import { saveIdentity, type TrackerIdentities } from "./run-identity.js";

/** A table of results (e.g. one validation pass: one row per rollout). */
export interface TrackedTable {
  columns: string[];
  rows: (string | number | boolean | null)[][];
}

/** One tool's run. Methods are called in order, one at a time; each may throw (the {@link TrackerSet} catches). */
export interface Tracker {
  /** The tool, as warnings name it: `wandb`, `mlflow`, `tensorboard`. */
  readonly tool: string;
  /** Opens the run and records its configuration. */
  start(config: Record<string, unknown>): Promise<void>;
  /** Records one step's numeric metrics (slash-namespaced keys, e.g. `reward/mean`). */
  logMetrics(step: number, metrics: Record<string, number>): Promise<void>;
  /** Records a table under `key` at `step`. */
  logTable(key: string, step: number, table: TrackedTable): Promise<void>;
  /** Records a run-level text value, e.g. `checkpoint_path`. */
  logSummary(key: string, value: string): Promise<void>;
  /** Ends the run as finished or failed. */
  finish(status: "finished" | "failed"): Promise<void>;
  /** The run to continue on `--resume`, once started (W&B and MLflow; TensorBoard's folder is the run name). */
  identity?(): TrackerIdentities;
}

/** Every configured tracker of one command; logging never blocks, slows or stops the caller. */
export class TrackerSet {
  private chains = new Map<Tracker, Promise<void>>();
  private readonly failed = new Set<Tracker>();

  /**
   * @param trackers - the run's trackers (possibly none)
   * @param log - where a failing tracker is reported, once
   * @param runDir - where each started run is recorded (`tracking.json`) for `--resume`; omitted: nowhere
   */
  constructor(
    readonly trackers: readonly Tracker[],
    private readonly log?: Logger,
    private readonly runDir?: string,
  ) {
    for (const tracker of trackers) this.chains.set(tracker, Promise.resolve());
  }

  /** @returns the tools logged to, e.g. `["tensorboard", "mlflow"]` */
  tools(): string[] {
    return this.trackers.map((t) => t.tool);
  }

  /** Opens every run with the command's configuration, and records each in the run folder. */
  start(config: Record<string, unknown>): void {
    this.each(async (t) => {
      await t.start(config);
      const identity = t.identity?.() ?? {};
      if (this.runDir === undefined) return;
      if (identity.wandb) saveIdentity(this.runDir, "wandb", identity.wandb);
      if (identity.mlflow) saveIdentity(this.runDir, "mlflow", identity.mlflow);
    });
  }

  /**
   * Records one step's metrics; values that are not finite numbers are left out.
   * @param step - the step (≥ 0)
   * @param metrics - a metrics record such as a `metrics.jsonl` line
   */
  logMetrics(step: number, metrics: Record<string, unknown>): void {
    const numeric: Record<string, number> = {};
    for (const [key, value] of Object.entries(metrics)) {
      if (typeof value === "number" && Number.isFinite(value) && key !== "step") numeric[key] = value;
    }
    this.each((t) => t.logMetrics(step, numeric));
  }

  /** Records a table under `key` at `step`. */
  logTable(key: string, step: number, table: TrackedTable): void {
    this.each((t) => t.logTable(key, step, table));
  }

  /** Records a run-level text value (the final checkpoint path as `checkpoint_path`). */
  logSummary(key: string, value: string): void {
    this.each((t) => t.logSummary(key, value));
  }

  /** Ends every run, then waits for everything queued. */
  async finish(status: "finished" | "failed"): Promise<void> {
    this.each((t) => t.finish(status));
    await this.flush();
  }

  /** Waits until everything queued so far was sent (or failed). */
  async flush(): Promise<void> {
    await Promise.all(this.chains.values());
  }

  private each(call: (tracker: Tracker) => Promise<void>): void {
    for (const [tracker, chain] of this.chains) {
      const next = chain.then(async () => {
        if (this.failed.has(tracker)) return;
        try {
          await call(tracker);
        } catch (err) {
          this.failed.add(tracker);
          this.log?.warn(
            { tracker: tracker.tool, reason: (err as Error).message },
            "experiment tracker failed; not logging more to it, training goes on",
          );
        }
      });
      this.chains.set(tracker, next);
    }
  }
}
