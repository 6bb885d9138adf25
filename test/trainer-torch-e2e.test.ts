/**
 * End-to-end GRPO on the torch engine: `arclight train CONFIG.yaml` with `engine: {kind: torch}` starts its own
 * gateway child, a torch worker (the bundled tiny Qwen2, random init) behind the engine server, and a controller
 * running node agents that call the proxy with the openai SDK; two steps train and a checkpoint is a Hugging Face folder.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { skipWithoutPython, testPython } from "../src/testing/python.js";
import { tempDir } from "../src/testing/temp-dir.js";
import { TEST_AGENT } from "./support/stack.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const exec = promisify(execFile);

describe.skipIf(skipWithoutPython())("trainer end to end on the torch engine", () => {
  it("arclight train with engine.kind torch runs 2 GRPO steps and checkpoints a Hugging Face folder", async () => {
    const dir = tempDir("arclight-train-torch-");
    const inputs = Array.from({ length: 2 }, (_, i) => JSON.stringify({ prompt: `say a ${i}`, turns: 1 }));
    writeFileSync(join(dir, "train.jsonl"), `${inputs.join("\n")}\n`);
    const yaml = [
      "name: torch",
      "data: { train_path: train.jsonl }",
      "train_batch_size: 2",
      "n: 2",
      "total_steps: 2",
      "checkpoint_interval: 2",
      `controller: { command: [node, ${JSON.stringify(TEST_AGENT)}], env_map: { AGL_INPUT: input } }`,
      "aggregator: { max_prompt_length: 128, max_response_length: 96 }",
      "optimizer: { learning_rate: 0.001 }",
      "pause_retry_after_seconds: 0",
      `engine: { kind: torch, model: "new:qwen2-tiny", python: ${JSON.stringify(testPython())}, context_length: 256 }`,
    ].join("\n");
    writeFileSync(join(dir, "train.yaml"), `${yaml}\n`);
    const { stdout } = await exec(
      process.execPath,
      ["--import", import.meta.resolve("tsx"), MAIN, "train", "train.yaml"],
      {
        cwd: dir,
        timeout: 240_000,
      },
    );
    expect(stdout).toContain("2 steps, policy version 2");
    const runDir = join(dir, "runs", "torch");
    const metrics = readFileSync(join(runDir, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, number | null>);
    expect(metrics.map((m) => m.rollouts)).toEqual([4, 4]);
    for (const m of metrics) {
      expect(m.tokens).toBeGreaterThan(0);
      expect(m.entropy).toBeGreaterThan(0);
    }
    const checkpoints = readdirSync(join(runDir, "checkpoints")).filter((name) => name !== "latest.json");
    const engineDir = join(runDir, "checkpoints", checkpoints[0]!, "engine");
    for (const file of ["config.json", "model.safetensors", "tokenizer.json", "sharded/.metadata", "arclight.json"])
      expect(existsSync(join(engineDir, file)), file).toBe(true);
  }, 300_000);

  it("a dead engine.url stops train with one line naming the worker's URL", async () => {
    const dir = tempDir("arclight-train-torch-dead-");
    writeFileSync(join(dir, "train.jsonl"), `${JSON.stringify({ prompt: "x" })}\n`);
    const yaml = [
      "name: deadurl",
      "data: { train_path: train.jsonl }",
      `controller: { command: [node, ${JSON.stringify(TEST_AGENT)}], env_map: { AGL_INPUT: input } }`,
      'engine: { kind: torch, url: "http://127.0.0.1:9" }',
    ].join("\n");
    writeFileSync(join(dir, "train.yaml"), `${yaml}\n`);
    const failed = await exec(process.execPath, ["--import", import.meta.resolve("tsx"), MAIN, "train", "train.yaml"], {
      cwd: dir,
      timeout: 120_000,
    }).catch((err: { code: number; stderr: string }) => err);
    expect(failed).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^arclight: engine: .*http:\/\/127\.0\.0\.1:9/),
    });
    expect((failed as { stderr: string }).stderr.trim().split("\n")).toHaveLength(1);
  }, 120_000);

  it("--init-from a folder that is no torch checkpoint stops train with one line naming --init-from", async () => {
    const dir = tempDir("arclight-train-torch-init-");
    writeFileSync(join(dir, "train.jsonl"), `${JSON.stringify({ prompt: "x" })}\n`);
    mkdirSync(join(dir, "embedded"));
    writeFileSync(join(dir, "embedded", "config.json"), "{}\n");
    const yaml = [
      "name: badinit",
      "data: { train_path: train.jsonl }",
      `controller: { command: [node, ${JSON.stringify(TEST_AGENT)}], env_map: { AGL_INPUT: input } }`,
      `engine: { kind: torch, model: "new:qwen2-tiny", python: ${JSON.stringify(testPython())}, context_length: 256 }`,
    ].join("\n");
    writeFileSync(join(dir, "train.yaml"), `${yaml}\n`);
    const args = ["--import", import.meta.resolve("tsx"), MAIN, "train", "train.yaml", "--init-from", "embedded"];
    const failed = await exec(process.execPath, args, { cwd: dir, timeout: 120_000 }).catch(
      (err: { code: number; stderr: string }) => err,
    );
    expect(failed).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^arclight: --init-from embedded: .*arclight\.json/m),
    });
    const lines = (failed as { stderr: string }).stderr.trim().split("\n");
    expect(lines.filter((line) => line.startsWith("arclight:"))).toHaveLength(1);
    expect(lines.at(-1)).not.toContain("--resume");
  }, 120_000);

  it("a Python without the arclight-torch package stops train with one line naming the install command", async () => {
    const dir = tempDir("arclight-train-torch-missing-");
    writeFileSync(join(dir, "train.jsonl"), `${JSON.stringify({ prompt: "x" })}\n`);
    const yaml = [
      "name: nopkg",
      "data: { train_path: train.jsonl }",
      `controller: { command: [node, ${JSON.stringify(TEST_AGENT)}], env_map: { AGL_INPUT: input } }`,
      "engine: { kind: torch, python: /usr/bin/python3 }",
    ].join("\n");
    writeFileSync(join(dir, "train.yaml"), `${yaml}\n`);
    const failed = await exec(process.execPath, ["--import", import.meta.resolve("tsx"), MAIN, "train", "train.yaml"], {
      cwd: dir,
      timeout: 120_000,
    }).catch((err: { code: number; stderr: string }) => err);
    expect(failed).toMatchObject({ code: expect.any(Number), stderr: expect.stringContaining("pip install ./python") });
    expect((failed as { stderr: string }).stderr.trim().split("\n")).toHaveLength(1);
  }, 120_000);
});
