/**
 * @module `arclight train` with a torch engine whose worker cannot start (a model folder that does not exist, on one
 * rank and on two under torchrun): the worker's own line names the folder, then arclight stops with one line and
 * exit code 2, no stack trace.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { skipWithoutPython, testPython } from "../testing/python.js";
import { tempDir } from "../testing/temp-dir.js";

const main = fileURLToPath(new URL("./main.ts", import.meta.url));
const calculator = fileURLToPath(new URL("../../examples/calculator/", import.meta.url));

/** Runs `arclight train` on a config whose engine.model is missing; its exit code and stderr. */
async function trainMissingModel(ranks: string): Promise<{ code: number; stderr: string }> {
  const dir = tempDir("arclight-train-torch-start-");
  const config = join(dir, "train.yaml");
  writeFileSync(
    config,
    [
      "name: missing-model",
      "data:",
      `  train_path: ${join(calculator, "data/train.jsonl")}`,
      "train_batch_size: 2",
      "n: 2",
      "total_steps: 1",
      "controller:",
      `  command: [node, ${join(calculator, "agent.ts")}]`,
      "engine:",
      "  kind: torch",
      `  model: ${join(dir, "no-such-model")}`,
      `  python: ${testPython()}`,
      ranks,
    ].join("\n"),
  );
  const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), main, "train", config], {
    cwd: dir,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const [code] = (await once(child, "exit")) as [number];
  return { code, stderr };
}

describe.skipIf(skipWithoutPython())("arclight train: a torch worker that cannot start", () => {
  for (const [what, ranks] of [
    ["one rank", "  nproc_per_node: null"],
    ["two ranks", "  nproc_per_node: 2"],
  ] as const) {
    it(`${what}: the worker names the folder, arclight stops with one line`, async () => {
      const { code, stderr } = await trainMissingModel(ranks);
      expect(code, stderr).toBe(2);
      expect(stderr).toMatch(/arclight-torch: --model \S+no-such-model: not a Hugging Face model folder/);
      const last = stderr.trim().split("\n").at(-1);
      expect(last).toMatch(
        /^arclight: engine \S+no-such-model: torch worker exited \(code \d\) before listening \(its own message is above\)$/,
      );
      expect(stderr).not.toMatch(/^\s+at /m);
    }, 120_000);
  }
});
