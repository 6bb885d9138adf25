/**
 * `arclight train --resume` continues the tracker runs of the run it resumes: the same W&B run (online), the same
 * MLflow run, and the same TensorBoard folder, steps going on; a config naming another MLflow experiment gets a new
 * run and one line saying so.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runProcess } from "../src/testing/run-process.js";
import { FakeMlflow } from "../src/tracking/testing/fake-mlflow.js";
import { FakeWandb } from "../src/tracking/testing/fake-wandb.js";
import { TEST_AGENT } from "./support/stack.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const TSX = new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href;
const workDir = mkdtempSync(join(tmpdir(), "arclight-train-resume-"));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

describe("arclight train --resume with trackers", () => {
  it("continues the W&B and MLflow runs and the TensorBoard folder; another experiment gets a new run", async () => {
    const mlflow = await FakeMlflow.start();
    const wandb = await FakeWandb.start("k");
    try {
      writeFileSync(
        join(workDir, "train.jsonl"),
        ["say a 0", "say a 1"].map((p) => `${JSON.stringify({ prompt: p, turns: 2 })}\n`).join(""),
      );
      const yaml = [
        "name: resumed",
        "data: { train_path: train.jsonl }",
        "train_batch_size: 1",
        "n: 2",
        "total_steps: 1",
        `controller: { command: [node, ${JSON.stringify(TEST_AGENT)}], env_map: { AGL_INPUT: input } }`,
        "aggregator: { max_prompt_length: 128, max_response_length: 96 }",
        "pause_retry_after_seconds: 0",
        `tracking: { tensorboard: { dir: tb }, mlflow: { tracking_uri: "${mlflow.url}" }, wandb: { project: p } }`,
      ].join("\n");
      writeFileSync(join(workDir, "train.yaml"), `${yaml}\n`);
      const train = (...args: string[]) =>
        runProcess([process.execPath, "--import", TSX, MAIN, "train", "train.yaml", ...args], {
          cwd: workDir,
          env: { PATH: process.env.PATH, WANDB_API_KEY: "k", WANDB_BASE_URL: wandb.url },
        });

      const first = await train();
      expect(first.code, first.stderr).toBe(0);
      const recorded = JSON.parse(readFileSync(join(workDir, "runs", "resumed", "tracking.json"), "utf8"));
      expect(Object.keys(recorded).sort()).toEqual(["mlflow", "wandb"]);

      const second = await train("--resume", "--set", "total_steps=2");
      expect(second.code, second.stderr).toBe(0);
      expect(mlflow.runs.size).toBe(1);
      const run = mlflow.runs.get(recorded.mlflow.run_id)!;
      expect(run.info.status).toBe("FINISHED");
      expect(run.metrics["reward/mean"]!.map((m) => m.step)).toEqual([1, 2]);
      expect(wandb.runs.size).toBe(1);
      const wandbRun = wandb.runs.get(`${wandb.defaultEntity}/p/${recorded.wandb.run_id}`)!;
      expect(wandbRun.history.map((row) => row._step)).toEqual([1, 2]);
      expect(wandbRun.exitcode).toBe(0);
      expect(readdirSync(join(workDir, "tb", "resumed")).filter((f) => f.startsWith("events.out"))).toHaveLength(2);

      // Another experiment: a new MLflow run, said in one line; W&B (same project) still continues.
      const third = await train("--resume", "--set", "total_steps=3", "--mlflow-experiment", "other");
      expect(third.code, third.stderr).toBe(0);
      expect(third.stdout).toContain(`MLflow run ${recorded.mlflow.run_id} was in experiment arclight`);
      expect(third.stdout).toContain("starting a new MLflow run");
      expect(mlflow.runs.size).toBe(2);
      expect(wandb.runs.size).toBe(1);
      expect(wandbRun.history.map((row) => row._step)).toEqual([1, 2, 3]);
      const now = JSON.parse(readFileSync(join(workDir, "runs", "resumed", "tracking.json"), "utf8"));
      expect(now.mlflow.experiment).toBe("other");
      expect(now.wandb.run_id).toBe(recorded.wandb.run_id);
    } finally {
      await Promise.all([mlflow.close(), wandb.close()]);
    }
  }, 300_000);
});
