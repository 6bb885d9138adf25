import { afterEach, describe, expect, it } from "vitest";
import { configParams, MlflowTracker } from "./mlflow.js";
import { FakeMlflow } from "./testing/fake-mlflow.js";
import { TrackerSet } from "./tracker.js";

const servers: FakeMlflow[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function server(): Promise<FakeMlflow> {
  const fake = await FakeMlflow.start();
  servers.push(fake);
  return fake;
}

describe("MLflow tracker (REST API)", () => {
  it("creates the experiment and a run, logs params, metrics per step, a table and the checkpoint, then ends it", async () => {
    const mlflow = await server();
    const tracker = new MlflowTracker(mlflow.url, "agents", "run-a");
    await tracker.start({ name: "run-a", loss: { clip_low: 0.2 }, data: { val_path: null } });
    await tracker.logMetrics(1, { "reward/mean": 0.25, loss: 1.5 });
    await tracker.logMetrics(2, { "reward/mean": 0.75, loss: 1.25 });
    await tracker.logTable("validation", 2, { columns: ["input", "reward"], rows: [["2+2", 1]] });
    await tracker.logSummary("checkpoint_path", "/runs/run-a/checkpoints/step-2");
    await tracker.finish("finished");

    expect(mlflow.experiments.get("agents")).toBe("1");
    const run = mlflow.runs.get(tracker.id())!;
    expect(run.info).toMatchObject({ experiment_id: "1", run_name: "run-a", status: "FINISHED" });
    expect(run.params).toEqual({ name: "run-a", "loss.clip_low": "0.2", "data.val_path": "null" });
    expect(run.metrics["reward/mean"]!.map((m) => [m.step, m.value])).toEqual([
      [1, 0.25],
      [2, 0.75],
    ]);
    expect(run.tags["mlflow.runName"]).toBe("run-a");
    expect(run.tags["arclight.checkpoint_path"]).toBe("/runs/run-a/checkpoints/step-2");
    expect(JSON.parse(run.tags["mlflow.loggedArtifacts"]!)).toEqual([
      { path: "validation/step_2.json", type: "table" },
    ]);
    expect(mlflow.artifacts.get(`1/${tracker.id()}/artifacts/validation/step_2.json`)).toEqual({
      columns: ["input", "reward"],
      data: [["2+2", 1]],
    });
  });

  it("continues a resumed run: RUNNING again, metrics on, new params only, tables kept, FINISHED", async () => {
    const mlflow = await server();
    const first = new MlflowTracker(mlflow.url, "agents", "run-r");
    await first.start({ steps: 3, lr: 0.1 });
    await first.logMetrics(1, { "reward/mean": 0.25 });
    await first.logTable("validation", 1, { columns: ["reward"], rows: [[1]] });
    await first.finish("failed");
    const identity = first.identity().mlflow!;
    expect(identity).toEqual({ run_id: first.id(), tracking_uri: mlflow.url, experiment: "agents" });
    expect(mlflow.runs.get(first.id())!.info.status).toBe("FAILED");

    const warnings: unknown[] = [];
    const log = { warn: (...args: unknown[]) => void warnings.push(args) };
    const second = new MlflowTracker(mlflow.url, "agents", "run-r", "", Date.now, log, identity);
    await second.start({ steps: 5, lr: 0.1, seed: 7 });
    expect(second.id()).toBe(first.id());
    expect(mlflow.runs.get(first.id())!.info.status).toBe("RUNNING");
    await second.logMetrics(2, { "reward/mean": 0.5 });
    await second.logTable("validation", 2, { columns: ["reward"], rows: [[0]] });
    await second.finish("finished");

    expect(mlflow.runs.size).toBe(1);
    const run = mlflow.runs.get(first.id())!;
    expect(run.info.status).toBe("FINISHED");
    expect(run.metrics["reward/mean"]!.map((m) => [m.step, m.value])).toEqual([
      [1, 0.25],
      [2, 0.5],
    ]);
    // MLflow refuses to change a param: `steps` keeps its first value, with a warning naming it.
    expect(run.params).toEqual({ steps: "3", lr: "0.1", seed: "7" });
    expect(JSON.stringify(warnings)).toContain('"params":["steps"]');
    expect(JSON.parse(run.tags["mlflow.loggedArtifacts"]!).map((t: { path: string }) => t.path)).toEqual([
      "validation/step_1.json",
      "validation/step_2.json",
    ]);
  });

  it("resuming a run the server does not have starts a new one, with a warning", async () => {
    const mlflow = await server();
    const warnings: unknown[] = [];
    const log = { warn: (...args: unknown[]) => void warnings.push(args) };
    const identity = { run_id: "gone", tracking_uri: mlflow.url, experiment: "agents" };
    const tracker = new MlflowTracker(mlflow.url, "agents", "run-g", "", Date.now, log, identity);
    await tracker.start({ steps: 1 });
    await tracker.finish("finished");
    expect(tracker.id()).not.toBe("gone");
    expect(mlflow.runs.get(tracker.id())!.info.status).toBe("FINISHED");
    expect(JSON.stringify(warnings)).toContain("MLflow run to resume is gone");
  });

  it("reuses an experiment that exists and marks a failed run FAILED", async () => {
    const mlflow = await server();
    mlflow.experiments.set("agents", "7");
    const tracker = new MlflowTracker(`${mlflow.url}/`, "agents", "run-b");
    await tracker.start({});
    await tracker.finish("failed");
    expect(mlflow.runs.get(tracker.id())!.info).toMatchObject({ experiment_id: "7", status: "FAILED" });
    expect(mlflow.calls).not.toContain("POST /api/2.0/mlflow/experiments/create");
  });

  it("without an artifact store skips only tables, with one warning: metrics, params, tags and status go on", async () => {
    for (const setup of [
      (m: FakeMlflow) => {
        m.artifactRoot = "./mlruns"; // --no-serve-artifacts: a root the server does not serve
      },
      (m: FakeMlflow) => {
        m.servesArtifacts = false; // mlflow-artifacts: URI, but no artifact routes: uploads answer 404
      },
    ]) {
      const mlflow = await server();
      setup(mlflow);
      const warnings: unknown[][] = [];
      const log = { warn: (...args: unknown[]) => void warnings.push(args) };
      const tracker = new MlflowTracker(mlflow.url, "agents", "run-d", "", Date.now, log as never);
      const set = new TrackerSet([tracker]);
      set.start({ loss: { clip_low: 0.2 } });
      set.logMetrics(1, { "reward/mean": 0.5 });
      set.logTable("validation", 1, { columns: ["reward"], rows: [[1]] });
      set.logMetrics(2, { "reward/mean": 0.75 });
      set.logTable("validation", 2, { columns: ["reward"], rows: [[0]] });
      set.logSummary("checkpoint_path", "/runs/d/step-2");
      await set.finish("finished");

      const run = mlflow.runs.get(tracker.id())!;
      expect(run.info.status).toBe("FINISHED");
      expect(run.params).toEqual({ "loss.clip_low": "0.2" });
      expect(run.metrics["reward/mean"]!.map((m) => m.value)).toEqual([0.5, 0.75]);
      expect(run.tags["arclight.checkpoint_path"]).toBe("/runs/d/step-2");
      expect(run.tags["mlflow.loggedArtifacts"]).toBeUndefined();
      expect(mlflow.artifacts.size).toBe(0);
      expect(warnings).toHaveLength(1);
      expect(tracker.tablesSkipped()).toMatch(/mlruns|answered 404/);
    }
  });

  it("fails with the server's answer when the server refuses", async () => {
    const mlflow = await server();
    mlflow.failWith = 503;
    await expect(new MlflowTracker(mlflow.url, "agents", "run-c").start({})).rejects.toThrow(/answered 503/);
  });

  it("flattens nested config keys and cuts long values to 500 characters", () => {
    const params = configParams({ a: { b: [1, 2] }, s: "x".repeat(600) });
    expect(params[0]).toEqual(["a.b", "[1,2]"]);
    expect(params[1]![1]).toHaveLength(500);
    expect(params[1]![1].endsWith("…")).toBe(true);
  });

  it("a server that does not answer fails naming the URL and the socket's error", async () => {
    const mlflow = await server();
    const url = mlflow.url;
    await mlflow.close();
    servers.length = 0;
    const tracker = new MlflowTracker(url, "agents", "run-z");
    await expect(tracker.start({})).rejects.toThrow(new RegExp(`${url}/api/2\\.0/mlflow/.* failed: .*ECONNREFUSED`));
  });
});
