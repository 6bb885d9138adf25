import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { MlflowTracker } from "../tracking/mlflow.js";
import { FakeMlflow } from "../tracking/testing/fake-mlflow.js";
import { TrackerSet } from "../tracking/tracker.js";
import { trackingReporter, validationTable } from "./tracking-reporter.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe("trackingReporter", () => {
  it("sends steps, validation tables and the checkpoint path; a tracker that goes down warns once", async () => {
    const mlflow = await FakeMlflow.start();
    cleanups.push(() => mlflow.close());
    const lines: { msg: string; tracker?: string }[] = [];
    const log = pino({ level: "warn" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const tracker = new MlflowTracker(mlflow.url, "agents", "run-a");
    const trackers = new TrackerSet([tracker], log);
    trackers.start({ name: "run-a" });
    const reporter = trackingReporter(trackers);
    reporter.onValidation?.(1, [{ rolloutId: "v1", dataIndex: 0, input: { q: "2+2" }, reward: 1, failed: false }]);
    reporter.onStep({ step: 1, "reward/mean": 0.5, "val/reward_mean": null }, 3);
    reporter.onCheckpoint?.(1, "/runs/run-a/checkpoints/step-1");
    await trackers.flush();
    const run = mlflow.runs.get(tracker.id())!;
    expect(run.metrics["reward/mean"]).toEqual([expect.objectContaining({ step: 1, value: 0.5 })]);
    expect(run.metrics["val/reward_mean"]).toBeUndefined();
    expect(run.tags["arclight.checkpoint_path"]).toBe("/runs/run-a/checkpoints/step-1");
    expect(mlflow.artifacts.get(`1/${tracker.id()}/artifacts/validation/rollouts/step_1.json`)).toEqual({
      columns: ["rollout_id", "data_index", "input", "reward", "failed"],
      data: [["v1", 0, '{"q":"2+2"}', 1, false]],
    });

    // The server goes down mid-run: the next steps are dropped with one warning, and nothing throws.
    mlflow.failWith = 503;
    reporter.onStep({ step: 2, "reward/mean": 0.6 }, 3);
    reporter.onStep({ step: 3, "reward/mean": 0.7 }, 3);
    await trackers.finish("finished");
    expect(lines.filter((l) => l.tracker === "mlflow")).toHaveLength(1);
    expect(run.metrics["reward/mean"]).toHaveLength(1);
  });

  it("cuts long inputs in the validation table to 300 characters", () => {
    const table = validationTable([{ rolloutId: "v", dataIndex: 2, input: "x".repeat(400), reward: 0, failed: true }]);
    expect(String(table.rows[0]![2])).toHaveLength(300);
  });
});
