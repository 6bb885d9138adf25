/**
 * The cut-down demo on the torch engine (`arclight demo --quick --engine torch`) as a real child process: the tiny
 * Qwen2 in a torch worker, teacher demonstrations written in the torch tokenizer's ids, SFT, GRPO, validation. It
 * checks the pipeline and that every demonstration re-renders to exactly the teacher's ids under the model's own
 * chat template; whether the policy learns is the full `--engine torch` run (docs/torch-engine.md, Demo).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { skipWithoutPython, testPython } from "../src/testing/python.js";
import { runProcess } from "../src/testing/run-process.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const TSX = new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href;
const workDir = mkdtempSync(join(tmpdir(), "arclight-demo-torch-test-"));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

describe.skipIf(skipWithoutPython())("arclight demo --quick --engine torch", () => {
  it("records demonstrations in the torch tokenizer's ids, warm-starts, trains and validates", async () => {
    const args = ["demo", "--quick", "--engine", "torch", "--python", testPython()!, "--name", "torch"];
    const env = { PATH: process.env.PATH, ...(process.env.PYTHONPATH ? { PYTHONPATH: process.env.PYTHONPATH } : {}) };
    const result = await runProcess([process.execPath, "--import", TSX, MAIN, ...args], { cwd: workDir, env });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(result.stdout).toContain("torch engine (new:qwen2-tiny)");
    const runDir = join(workDir, "runs", "torch");
    const summary = JSON.parse(readFileSync(join(runDir, "summary.json"), "utf8"));
    // Every demonstration was recorded, scored 1 and re-rendered to exactly the teacher's ids (no prefix mismatch).
    expect(summary.demonstrations).toEqual({ recorded: 8, kept: 8, rows: 8, mismatches: 0, failed: 0 });
    expect(summary.rlSteps).toBe(2);
    expect(summary.before.count).toBe(4);
    expect(summary.after.count).toBe(4);
    const checkpoint = readFileSync(join(summary.checkpointDir, "config.json"), "utf8");
    expect(JSON.parse(checkpoint).model_type).toBe("qwen2");
  }, 400_000);

  it("refuses --preset with --engine torch, naming the flag", async () => {
    const args = ["demo", "--quick", "--engine", "torch", "--preset", "tiny", "--name", "x"];
    const result = await runProcess([process.execPath, "--import", TSX, MAIN, ...args], {
      cwd: workDir,
      env: { PATH: process.env.PATH },
    });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe("arclight: --preset: embedded engine presets only (not with --engine torch)");
  }, 60_000);
});
