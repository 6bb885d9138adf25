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

/**
 * Writes the example's YAML with a short budget (1 step of 2 groups of 2 rollouts) into a temp dir, `extra` lines
 * added to its `agents` section, and runs `arclight train` on it.
 * @returns the run folder and the command's stdout
 */
async function trainExample(extra = ""): Promise<{ dir: string; runDir: string; stdout: string }> {
  const dir = tempDir("arclight-multi-agent-");
  const yaml = readFileSync(join(ROOT, "examples/multi-agent/train.yaml"), "utf8")
    .replace(/^name: .*$/m, "name: ma")
    .replace(/^total_steps: .*$/m, "total_steps: 1")
    .replace(/^train_batch_size: .*$/m, "train_batch_size: 2")
    .replace(/^n: .*$/m, "n: 2")
    .replace(/data\/(train|val)\.jsonl/g, (_m, split) => join(ROOT, `examples/multi-agent/data/${split}.jsonl`))
    // The agent runs in the temp dir: name the tsx loader and the script by absolute path.
    .replace("--import, tsx,", `--import, ${JSON.stringify(import.meta.resolve("tsx"))},`)
    .replace(", agent.ts]", `, ${JSON.stringify(join(ROOT, "examples/multi-agent/agent.ts"))}]`);
  writeFileSync(join(dir, "train.yaml"), yaml.replace("  frozen: [checker]\n", `  frozen: [checker]\n${extra}`));
  const { stdout } = await exec(
    process.execPath,
    ["--import", import.meta.resolve("tsx"), MAIN, "train", "train.yaml"],
    {
      cwd: dir,
      timeout: 240_000,
    },
  );
  return { dir, runDir: join(dir, "runs", "ma"), stdout };
}

/** Every model call the gateway recorded: the agent that made it, the model that served it, at which version. */
function recordedCalls(runDir: string): { agent_name: string; model: string; model_version: number }[] {
  const db = new Database(join(runDir, "gateway.db"), { readonly: true });
  const rows = db.prepare("SELECT data FROM events WHERE event_type = 'model_request'").all() as { data: string }[];
  db.close();
  return rows.map((row) => JSON.parse(row.data) as { agent_name: string; model: string; model_version: number });
}

/** SHA-256 of a fresh engine's weights: the starting weights of the example (embedded tiny, seed 0). */
async function freshSha256(dir: string): Promise<string> {
  const fresh = await createEngine({ kind: "embedded", model: "tiny", seed: 0 });
  const freshDir = join(dir, "fresh");
  await fresh.saveCheckpoint(freshDir);
  fresh.dispose();
  return weightsSha256(freshDir);
}

describe("selective multi-agent training", () => {
  it("trains writer and rewriter while the frozen checker's weights stay bit-identical and serve its calls", async () => {
    const { dir, runDir, stdout } = await trainExample();
    expect(stdout).toContain("1 steps, policy version 1");

    // 1. The frozen copy's weights did not move, and the trained policy's did (it started from the same weights).
    const frozen = JSON.parse(readFileSync(join(runDir, "frozen.json"), "utf8")) as Record<string, string>;
    expect(frozen.model).toBe("frozen");
    expect(frozen.end_sha256).toBe(frozen.start_sha256);
    const trained = weightsSha256(join(runDir, "checkpoints", "step-000001", "engine"));
    expect(trained).not.toBe(frozen.start_sha256);
    // The frozen copy holds the starting weights: those of a fresh engine of the run's preset and seed (tiny, 0).
    expect(await freshSha256(dir)).toBe(frozen.start_sha256);

    // 2. The checker's calls were served by the frozen model (version 0), the others by the policy.
    const calls = recordedCalls(runDir);
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

  it("with a policy per agent, trains and serves the writer's and the rewriter's policies apart", async () => {
    const { runDir, stdout } = await trainExample("  policy: per_agent\n");
    expect(stdout).toContain("1 steps, policy version 1");

    // 1. Each agent's calls were served by its own model; the checker's by the base weights as the frozen model.
    const calls = recordedCalls(runDir);
    expect(calls).toHaveLength(12);
    const servedBy = new Set(calls.map((c) => `${c.agent_name}:${c.model}:${c.model_version}`));
    expect([...servedBy].sort()).toEqual(["checker:frozen:0", "rewriter:policy-rewriter:0", "writer:policy-writer:0"]);

    // 2. Each policy trained on its own agent's rows only (4 calls each), in the same step.
    const metrics = JSON.parse(readFileSync(join(runDir, "metrics.jsonl"), "utf8").trim()) as Record<string, number>;
    expect(metrics.rows).toBe(8);
    expect(metrics["policy/writer/rows"]).toBe(4);
    expect([metrics["policy/writer/foreign_calls"], metrics["policy/rewriter/foreign_calls"]]).toEqual([0, 0]);
    expect(metrics["policy/rewriter/rows"]).toBe(4);
    expect(metrics["policy/writer/loss"]).not.toBeNull();
    expect(metrics["policy/rewriter/loss"]).not.toBeNull();

    // 3. The checkpoint holds one policy per agent (test/per-agent-policies.test.ts checks what each learned).
    const checkpoint = join(runDir, "checkpoints", "step-000001");
    expect(readdirSync(join(checkpoint, "policies")).sort()).toEqual(["rewriter", "writer"]);
    expect((metrics["policy/writer/tokens"] ?? 0) + (metrics["policy/rewriter/tokens"] ?? 0)).toBe(metrics.tokens);
  }, 300_000);
});
