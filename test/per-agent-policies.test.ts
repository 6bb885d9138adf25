/**
 * A policy per agent (`agents.policy: per_agent`) through `arclight train`: real gateway child, embedded engines and
 * their engine server, local controller, agent processes whose two turns are made by a writer and a rewriter (the
 * `x-arclight-agent` header). Checked against a second run that trains one shared policy on the writer alone: with
 * the same starting weights and seeded sampling both runs sample the same tokens, and π_old is recomputed by each
 * trained policy, so the writer's own policy must come out bit-identical to that shared policy; the rewriter's must not.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { startGatewayChild } from "../src/run/gateway-child.js";
import { skipWithoutPython, testPython } from "../src/testing/python.js";
import { tempDir } from "../src/testing/temp-dir.js";
import { TEST_AGENT } from "./support/stack.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const exec = promisify(execFile);

/** SHA-256 of a checkpoint's weights file. */
const weightsSha256 = (dir: string) =>
  createHash("sha256")
    .update(readFileSync(join(dir, "model.safetensors")))
    .digest("hex");

/** The CLI in `cwd`, with `env` added to this process's environment. */
const cli = (cwd: string, args: string[], env: Record<string, string> = {}) =>
  exec(process.execPath, ["--import", import.meta.resolve("tsx"), MAIN, ...args], {
    cwd,
    timeout: 240_000,
    env: { ...process.env, ...env },
  });

/**
 * Runs `arclight train` on a config of `steps` steps whose `agents` section is `agents` (in a new folder, or again in
 * `dir` with `args`, e.g. `--resume`); returns the run folder.
 */
async function train(
  agents: string,
  steps = 1,
  dir = tempDir("arclight-per-agent-"),
  args: string[] = [],
  more: string[] = [],
) {
  writeConfig(dir, agents, steps, more);
  const { stdout } = await cli(dir, ["train", "train.yaml", ...args]);
  expect(stdout).toContain(`${steps} steps, policy version ${steps}`);
  return join(dir, "runs", "pa");
}

/** Writes train.yaml (`steps` steps, `agents` as its agents section, `more` lines) and train.jsonl into `dir`. */
function writeConfig(dir: string, agents: string, steps: number, more: string[]): void {
  const input = { prompt: "say a", agents: ["writer", "rewriter"], reward_by_index: true };
  writeFileSync(
    join(dir, "train.jsonl"),
    `${JSON.stringify(input)}\n${JSON.stringify({ ...input, prompt: "say b" })}\n`,
  );
  const yaml = [
    "name: pa",
    "data: { train_path: train.jsonl }",
    "train_batch_size: 2",
    "n: 2",
    `total_steps: ${steps}`,
    `controller: { command: [node, ${JSON.stringify(TEST_AGENT)}], env_map: { AGL_INPUT: input } }`,
    "aggregator: { level: transition, max_prompt_length: 64, max_response_length: 16 }",
    // token-mean: a policy's loss is the mean over its own rows' tokens, whichever agents share their rollouts.
    "loss: { aggregation: token-mean }",
    "optimizer: { learning_rate: 0.01, weight_decay: 0 }",
    // π_old from each policy itself: the sampled logprobs differ in the last bits with what else was decoded in
    // the same batch (the runs batch the writer's calls with different company), its recomputation does not.
    "mismatch: { recompute_old_logprobs: true, is_level: none }",
    "checkpoint_interval: 0",
    "val_interval: 0",
    "pause_retry_after_seconds: 0",
    `agents: ${agents}`,
    ...more,
  ].join("\n");
  writeFileSync(join(dir, "train.yaml"), `${yaml}\n`);
}

/** Each recorded call as `agent:model:version`, sorted, one entry per distinct value. */
function servedBy(runDir: string): string[] {
  const db = new Database(join(runDir, "gateway.db"), { readonly: true });
  const rows = db.prepare("SELECT data FROM events WHERE event_type = 'model_request'").all() as { data: string }[];
  db.close();
  const calls = rows.map((row) => JSON.parse(row.data) as { agent_name: string; model: string; model_version: number });
  return [...new Set(calls.map((c) => `${c.agent_name}:${c.model}:${c.model_version}`))].sort();
}

describe("a policy per agent", () => {
  it("trains each agent's policy on its own rows only (the writer's equals a shared policy trained on the writer), and evaluates from its checkpoint", async () => {
    const perAgent = await train("{ train: [writer, rewriter], policy: per_agent }");
    expect(servedBy(perAgent)).toEqual(["rewriter:policy-rewriter:0", "writer:policy-writer:0"]);
    const metrics = JSON.parse(readFileSync(join(perAgent, "metrics.jsonl"), "utf8").trim()) as Record<string, number>;
    // Every row went to one of the two policies (a call with an empty response makes no row).
    expect(metrics["policy/writer/rows"]).toBeGreaterThan(0);
    expect(metrics["policy/rewriter/rows"]).toBeGreaterThan(0);
    expect((metrics["policy/writer/rows"] ?? 0) + (metrics["policy/rewriter/rows"] ?? 0)).toBe(metrics.rows);
    expect(metrics["policy/writer/grad_norm"]).toBeGreaterThan(0);
    const policies = join(perAgent, "checkpoints", "step-000001", "policies");
    expect(readdirSync(policies).sort()).toEqual(["rewriter", "writer"]);

    // `arclight eval` serves each agent its policy from the trainer checkpoint, and names the folder to give.
    const run = (args: string[]) => cli(join(perAgent, "..", ".."), args);
    const checkpoint = join(perAgent, "checkpoints", "step-000001");
    const evaluated = await run(["eval", "train.yaml", "--checkpoint", checkpoint, "--split", "train"]);
    expect(evaluated.stdout).toMatch(/completed\s+100\.0%/);
    const wrong = run(["eval", "train.yaml", "--checkpoint", join(checkpoint, "engine"), "--split", "train"]);
    await expect(wrong).rejects.toThrow(
      `the config trains a policy per agent (agents.policy per_agent): give the trainer checkpoint that holds policies/AGENT, e.g. runs/NAME/checkpoints/step-000010; did you mean ${checkpoint}?`,
    );
    const agentOwn = run(["eval", "train.yaml", "--checkpoint", join(policies, "writer"), "--split", "train"]);
    await expect(agentOwn).rejects.toThrow(`did you mean ${checkpoint}?`);
    const asShared = ["eval", "train.yaml", "--set", "agents.policy=shared", "--checkpoint", checkpoint];
    await expect(run([...asShared, "--split", "train"])).rejects.toThrow(
      "it holds a policy per agent (policies/AGENT): evaluate it with agents.policy per_agent",
    );
    const fewer = run(["eval", "train.yaml", "--set", "agents.train=[writer]", "--checkpoint", checkpoint]);
    await expect(fewer).rejects.toThrow("holds the policies of rewriter, writer, but agents.train names writer");
    const initFromStep = run(["train", "train.yaml", "--set", "name=pa-init", "--init-from", checkpoint]);
    await expect(initFromStep).rejects.toThrow(
      `--init-from ${checkpoint}: checkpoint ${checkpoint}: no config.json (not a checkpoint directory); it holds a policy per agent: give one agent's folder, ${join(policies, "AGENT")}`,
    );

    const writerAlone = await train("{ train: [writer] }");
    expect(servedBy(writerAlone)).toEqual(["rewriter:policy:0", "writer:policy:0"]);
    const shared = weightsSha256(join(writerAlone, "checkpoints", "step-000001", "engine"));
    expect(weightsSha256(join(policies, "writer"))).toBe(shared);
    expect(weightsSha256(join(policies, "rewriter"))).not.toBe(shared);
  }, 300_000);

  it("resumes each agent's policy from its checkpoint: 1 step + --resume equals 2 steps in one go", async () => {
    const agents = "{ train: [writer, rewriter], policy: per_agent }";
    const whole = await train(agents, 2);
    const first = await train(agents, 1);
    // A changed agent list is refused before anything loads, rather than drop the rewriter's trained policy.
    const dropped = train("{ train: [writer], policy: per_agent }", 2, join(first, "..", ".."), ["--resume"]);
    await expect(dropped).rejects.toThrow(
      /--resume: checkpoint .* holds the policies of rewriter, writer, but agents.train names writer/,
    );
    const resumed = await train(agents, 2, join(first, "..", ".."), ["--resume"]);
    for (const agent of ["writer", "rewriter"]) {
      const at = (run: string, step: number) => join(run, "checkpoints", `step-00000${step}`, "policies", agent);
      expect(weightsSha256(at(resumed, 2))).toBe(weightsSha256(at(whole, 2)));
      expect(weightsSha256(at(resumed, 2))).not.toBe(weightsSha256(at(first, 1)));
    }
  }, 300_000);

  it("warns and counts when a running gateway without the agent routes serves an agent another model", async () => {
    const dir = tempDir("arclight-per-agent-routes-");
    const gateway = await startGatewayChild(join(dir, "gateway.db"), "policy");
    try {
      writeConfig(dir, "{ train: [writer, rewriter], policy: per_agent }", 1, []);
      const args = ["train", "train.yaml", "--gateway-url", gateway.url];
      const { stderr } = await cli(dir, args, { ARCLIGHT_KEY: gateway.key });
      expect(stderr).toContain("agent writer's calls were served by policy, not its policy policy-writer");
      const metrics = JSON.parse(readFileSync(join(dir, "runs", "pa", "metrics.jsonl"), "utf8").trim());
      expect([metrics["policy/writer/foreign_calls"], metrics["policy/rewriter/foreign_calls"]]).toEqual([4, 4]);
    } finally {
      await gateway.stop();
    }
  }, 300_000);

  it.skipIf(skipWithoutPython())(
    "on the torch engine: one worker, an adapter per agent, the base serving the frozen agent",
    async () => {
      const engine = `engine: { kind: torch, model: "new:qwen2-tiny", python: ${JSON.stringify(testPython())}, context_length: 128, lora: { rank: 4 } }`;
      const runDir = await train(
        "{ train: [writer], frozen: [rewriter], policy: per_agent }",
        1,
        undefined,
        [],
        [engine],
      );
      expect(servedBy(runDir)).toEqual(["rewriter:frozen:0", "writer:policy-writer:0"]);
      const adapter = join(runDir, "checkpoints", "step-000001", "policies", "writer");
      const state = JSON.parse(readFileSync(join(adapter, "arclight.json"), "utf8")) as { adapter: string };
      expect(state.adapter).toBe("writer");
      expect(readdirSync(adapter)).toContain("adapter_model.safetensors");
    },
    300_000,
  );
});
