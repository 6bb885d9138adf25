/**
 * End to end: the multi-agent example (examples/multi-agent, writer → checker → rewriter, plain openai SDK code)
 * trained by `arclight train` with the writer and rewriter selected and the checker frozen. Real gateway child,
 * embedded engine and its server, a second engine server for the frozen copy, local controller, agent processes.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { createEngine } from "../src/run/engine-factory.js";
import { tempDir } from "../src/testing/temp-dir.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MAIN = join(ROOT, "src/cli/main.ts");
const exec = promisify(execFile);

const isWeightsFile = (name: string) => name.endsWith(".safetensors") && !name.startsWith("optimizer");

/** SHA-256 of a checkpoint's weights, as run/frozen-serving.ts computes it (name, then bytes, of each weights file). */
function weightsSha256(dir: string): string {
  const hash = createHash("sha256");
  for (const name of readdirSync(dir).filter(isWeightsFile).sort()) {
    hash.update(name);
    hash.update(readFileSync(join(dir, name)));
  }
  return hash.digest("hex");
}

describe("selective multi-agent training", () => {
  it("trains writer and rewriter while the frozen checker's weights stay bit-identical and serve its calls", async () => {
    const dir = tempDir("arclight-multi-agent-");
    // The example's YAML with a short budget: 1 step of 2 groups of 2 rollouts.
    const yaml = readFileSync(join(ROOT, "examples/multi-agent/train.yaml"), "utf8")
      .replace(/^name: .*$/m, "name: ma")
      .replace(/^total_steps: .*$/m, "total_steps: 1")
      .replace(/^train_batch_size: .*$/m, "train_batch_size: 2")
      .replace(/^n: .*$/m, "n: 2")
      .replace(/data\/(train|val)\.jsonl/g, (_m, split) => join(ROOT, `examples/multi-agent/data/${split}.jsonl`));
    writeFileSync(join(dir, "train.yaml"), yaml);
    // The agent runs in the temp dir: name the tsx loader and the script by absolute path.
    const command = yaml
      .replace("--import, tsx,", `--import, ${JSON.stringify(import.meta.resolve("tsx"))},`)
      .replace(", agent.ts]", `, ${JSON.stringify(join(ROOT, "examples/multi-agent/agent.ts"))}]`);
    writeFileSync(join(dir, "train.yaml"), command);
    const { stdout } = await exec(
      process.execPath,
      ["--import", import.meta.resolve("tsx"), MAIN, "train", "train.yaml"],
      {
        cwd: dir,
        timeout: 240_000,
      },
    );
    expect(stdout).toContain("1 steps, policy version 1");
    const runDir = join(dir, "runs", "ma");

    // 1. The frozen copy's weights did not move, and the trained policy's did (it started from the same weights).
    const frozen = JSON.parse(readFileSync(join(runDir, "frozen.json"), "utf8")) as Record<string, string>;
    expect(frozen.model).toBe("frozen");
    expect(frozen.end_sha256).toBe(frozen.start_sha256);
    const trained = weightsSha256(join(runDir, "checkpoints", "step-000001", "engine"));
    expect(trained).not.toBe(frozen.start_sha256);
    // The frozen copy holds the starting weights: those of a fresh engine of the run's preset and seed (tiny, 0).
    const fresh = await createEngine({ kind: "embedded", model: "tiny", seed: 0 });
    const freshDir = join(dir, "fresh");
    await fresh.saveCheckpoint(freshDir);
    fresh.dispose();
    expect(weightsSha256(freshDir)).toBe(frozen.start_sha256);

    // 2. The checker's calls were served by the frozen model (version 0), the others by the policy.
    const db = new Database(join(runDir, "gateway.db"), { readonly: true });
    const calls = db
      .prepare("SELECT data FROM events WHERE event_type = 'model_request'")
      .all()
      .map((row) => JSON.parse((row as { data: string }).data) as { agent_name: string; model: string });
    db.close();
    expect(calls).toHaveLength(12);
    const servedBy = new Set(calls.map((c) => `${c.agent_name}:${c.model}`));
    expect([...servedBy].sort()).toEqual(["checker:frozen", "rewriter:policy", "writer:policy"]);

    // 3. Only the trained agents' calls became rows; the writer's draft reward attached to its call.
    const metrics = JSON.parse(readFileSync(join(runDir, "metrics.jsonl"), "utf8").trim()) as Record<string, number>;
    expect(metrics.rollouts).toBe(4);
    expect(metrics.rows).toBe(8);
    expect(metrics["rewards/attached"]).toBe(4);
    expect(metrics["intermediate/no_number/hits"]).toBeGreaterThanOrEqual(0);
  }, 300_000);
});
