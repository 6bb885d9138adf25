/**
 * @module Posts a training run to the gateway's dashboard (`PUT /api/runs/{name}`, then each step's metrics to
 * `POST /api/runs/{name}/steps`) as a {@link StepReporter}. Posting never slows or stops training: posts are chained in
 * the background, and a failure is logged once and turns posting off for the rest of the run.
 */
import { existsSync, readFileSync } from "node:fs";
import type { Logger } from "pino";
import type { GatewayClient } from "../gateway/client.js";
import type { StepReporter } from "./loop.js";
import type { StepMetrics } from "./metrics.js";

/** A {@link StepReporter} that forwards each step's metrics to the gateway's `/api/runs`. */
export class RunPoster implements StepReporter {
  private readonly client: GatewayClient;
  private readonly name: string;
  private readonly log: Logger | undefined;
  private chain: Promise<void> = Promise.resolve();
  private enabled = true;

  /**
   * @param client - the gateway client of the run
   * @param name - the run name (the trainer's `name`)
   * @param log - where a failed post is reported (warn, once)
   */
  constructor(client: GatewayClient, name: string, log?: Logger) {
    this.client = client;
    this.name = name;
    this.log = log;
  }

  /**
   * Registers the run with its config and re-posts the steps already in `metricsPath` (a resumed run, or an old one).
   * @param config - the run's configuration, shown on the dashboard
   * @param totalSteps - the planned number of steps, or null
   * @param metricsPath - the run's `metrics.jsonl`; skipped when it does not exist
   */
  start(config: Record<string, unknown>, totalSteps: number | null, metricsPath?: string): void {
    const earlier = metricsPath !== undefined && existsSync(metricsPath) ? readMetricsFile(metricsPath) : [];
    this.enqueue(async () => {
      await this.client.putRun(this.name, { config, total_steps: totalSteps });
      if (earlier.length > 0) await this.client.postRunSteps(this.name, earlier);
    });
  }

  /** Posts one step's metrics in the background. */
  onStep(metrics: StepMetrics): void {
    this.enqueue(() => this.client.postRunSteps(this.name, [metrics]).then(() => undefined));
  }

  /** Nothing to release; {@link flush} waits for the posts. */
  close(): void {}

  /** Waits until every post queued so far has been sent (or has failed). */
  flush(): Promise<void> {
    return this.chain;
  }

  private enqueue(post: () => Promise<void>): void {
    this.chain = this.chain.then(async () => {
      if (!this.enabled) return;
      try {
        await post();
      } catch (err) {
        this.enabled = false;
        this.log?.warn(
          { reason: (err as Error).message, run: this.name },
          "dashboard metrics post failed; not posting more for this run",
        );
      }
    });
  }
}

/**
 * Reads a `metrics.jsonl` (one step record a line); blank and unparsable lines (a line cut by a crash) are skipped.
 * @param path - the file
 * @returns the records in file order
 */
export function readMetricsFile(path: string): StepMetrics[] {
  const records: StepMetrics[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    try {
      records.push(JSON.parse(line) as StepMetrics);
    } catch {
      // A torn last line is what a crash leaves; the steps before it are still worth showing.
    }
  }
  return records;
}

/**
 * One reporter that calls several, in order.
 * @param reporters - e.g. the console table and a {@link RunPoster}
 */
export function combineReporters(...reporters: StepReporter[]): StepReporter {
  return {
    onStep: (metrics, totalSteps) => {
      for (const reporter of reporters) reporter.onStep(metrics, totalSteps);
    },
    onValidation: (step, rows) => {
      for (const reporter of reporters) reporter.onValidation?.(step, rows);
    },
    onCheckpoint: (step, dir) => {
      for (const reporter of reporters) reporter.onCheckpoint?.(step, dir);
    },
    close: () => {
      for (const reporter of reporters) reporter.close();
    },
  };
}
