/**
 * `arclight train` with a config the engine refuses (aggregator lengths over its context) opens no tracker run:
 * the check comes before the trackers start.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runProcess } from "../src/testing/run-process.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const TSX = new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href;
const workDir = mkdtempSync(join(tmpdir(), "arclight-train-refused-"));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

describe("arclight train with a config the engine refuses", () => {
  it("exits 2 naming the lengths, leaving no TensorBoard file and no W&B run", async () => {
    writeFileSync(join(workDir, "train.jsonl"), `${JSON.stringify({ question: "1+1", answer: "2" })}\n`);
    // The default aggregator lengths (1024 + 1024) exceed the tiny preset's 256-token context.
    writeFileSync(
      join(workDir, "train.yaml"),
      [
        "name: refused",
        "data: {train_path: train.jsonl}",
        "train_batch_size: 1",
        "n: 2",
        "total_steps: 1",
        "controller: {command: [node, -e, '0']}",
        "tracking: {tensorboard: {dir: tb}, wandb: {project: p, mode: offline}}",
      ].join("\n"),
    );
    const result = await runProcess([process.execPath, "--import", TSX, MAIN, "train", "train.yaml"], {
      cwd: workDir,
      env: { PATH: process.env.PATH, WANDB_DIR: workDir },
    });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/aggregator\.max_prompt_length \+ aggregator\.max_response_length = 2048/);
    expect(existsSync(join(workDir, "tb"))).toBe(false);
    expect(existsSync(join(workDir, "wandb"))).toBe(false);
  }, 120_000);
});
