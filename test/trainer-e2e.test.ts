/**
 * End-to-end tiny training through real components: gateway (proxy mounted), tiny embedded engine behind the engine
 * server, local controller running node agents that call the proxy with the openai SDK and post a reward.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../src/testing/temp-dir.js";
import { parseTrainerConfig, type TrainerConfigInput } from "../src/trainer/config.js";
import { runTraining } from "../src/trainer/loop.js";
import { startTrainerStack, TEST_AGENT, type TrainerStack } from "./support/stack.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const exec = promisify(execFile);
/** Runs the CLI from source in a child process (async: the in-process gateway must keep answering). */
function run(args: string[], cwd?: string) {
  return exec(process.execPath, ["--import", import.meta.resolve("tsx"), MAIN, ...args], { cwd, timeout: 120_000 });
}

let stack: TrainerStack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

function tinyConfig(overrides: TrainerConfigInput = {}) {
  return parseTrainerConfig({
    name: "tiny",
    train_batch_size: 2,
    n: 2,
    total_steps: 2,
    rollout_timeout_seconds: 60,
    controller: { command: ["node", TEST_AGENT], env_map: { AGL_INPUT: "input" } },
    aggregator: { level: "trajectory", max_prompt_length: 128, max_response_length: 96 },
    optimizer: { learning_rate: 1e-3 },
    checkpoint_interval: 0,
    val_interval: 1,
    pause_retry_after_seconds: 0,
    ...overrides,
  });
}

const items = (n: number, extra: object = {}) =>
  Array.from({ length: n }, (_, i) => ({ index: i, input: { prompt: `say a ${i}`, turns: 2, ...extra } }));

/**
 * Writes a CLI run's folder: train.jsonl with 2 calculator inputs and train.yaml (batch 1 × 2 rollouts).
 * @returns the YAML text written (without its final newline)
 */
function writeCliRun(dir: string, name: string, totalSteps: number, controller: string): string {
  writeFileSync(
    join(dir, "train.jsonl"),
    `${items(2)
      .map((item) => JSON.stringify(item.input))
      .join("\n")}\n`,
  );
  const yaml = [
    `name: ${name}`,
    "data: { train_path: train.jsonl }",
    "train_batch_size: 1",
    "n: 2",
    `total_steps: ${totalSteps}`,
    `controller: ${controller}`,
    "aggregator: { max_prompt_length: 128, max_response_length: 96 }",
    "pause_retry_after_seconds: 0",
  ].join("\n");
  writeFileSync(join(dir, "train.yaml"), `${yaml}\n`);
  return yaml;
}

/** The controller section running the test agent on each input. */
const TEST_AGENT_CONTROLLER = `{ command: [node, ${JSON.stringify(TEST_AGENT)}], env_map: { AGL_INPUT: input } }`;

describe("trainer end to end", () => {
  it("trains 2 steps: rows built from proxied calls, rewards recorded, policy version advanced, metrics written", async () => {
    stack = await startTrainerStack();
    const runDir = join(stack.dir, "runs", "tiny");
    const summary = await runTraining({
      config: tinyConfig(),
      client: stack.client,
      engine: stack.engine,
      serving: stack.serving,
      trainData: items(4),
      valData: items(2, { turns: 1 }),
      runDir,
      pollIntervalMs: 20,
    });
    expect(summary.steps).toBe(2);
    expect(summary.policyVersion).toBe(2);
    expect(stack.engine.policyVersion).toBe(2);
    const lines = readFileSync(join(runDir, "metrics.jsonl"), "utf8").trim().split("\n");
    const metrics = lines.map((line) => JSON.parse(line) as Record<string, number | null>);
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    for (const m of metrics) {
      expect(m.rollouts).toBe(4);
      expect(m.rows).toBeGreaterThanOrEqual(4);
      expect(m.tokens).toBeGreaterThan(0);
      expect(m.reward_filled).toBe(0);
      expect(m["val/reward_mean"]).not.toBeNull();
      expect(m.entropy).toBeGreaterThan(0);
    }
    // The gateway records the version that served each call: step 2's rollouts ran on version 1.
    const events = await stack.client.getEvents("tiny-e0-d0-0", { format: "triplet" });
    expect(events.some((e) => e.event_type === "reward")).toBe(true);
    const models = await stack.client.getEvents(summary.metrics.length > 0 ? "tiny-v2-d0-0" : "", {
      format: "triplet",
    });
    const served = models
      .filter((e) => e.event_type === "model_request")
      .map((e) => (e.data as { server: { version: number } }).server.version);
    expect(served).toEqual([2]);
    expect(existsSync(join(runDir, "checkpoints", "latest.json"))).toBe(true);

    // `arclight inspect` (a child process) shows the rows the adapter makes from one of the trained rollouts.
    const { stdout } = await run([
      "inspect",
      "tiny-e0-d0-0",
      "--gateway-url",
      stack.gateway.url,
      "--key",
      "test-key",
      "--max-prompt",
      "128",
      "--max-response",
      "96",
    ]);
    const report = JSON.parse(stdout) as {
      rows: { prompt_token_ids: number[]; response_token_ids: number[]; loss_mask: number[]; logprobs: unknown[] }[];
      counts: { calls: number };
      reward_filled: boolean;
    };
    expect(report.counts.calls).toBe(2);
    expect(report.reward_filled).toBe(false);
    expect(report.rows.length).toBeGreaterThanOrEqual(1);
    for (const row of report.rows) {
      expect(row.prompt_token_ids.length).toBeGreaterThan(0);
      expect(row.loss_mask).toHaveLength(row.response_token_ids.length);
      expect(row.logprobs).toHaveLength(row.response_token_ids.length);
      expect(row.loss_mask.some((m) => m === 1)).toBe(true);
    }
  });

  it("arclight train CONFIG.yaml runs one step with its own gateway child, engine and controller", async () => {
    const dir = tempDir("arclight-train-cli-");
    const yaml = writeCliRun(dir, "cli", 1, TEST_AGENT_CONTROLLER);
    const { stdout, stderr } = await run(["train", "train.yaml", "--log-level", "info"], dir);
    expect(stdout).toContain("1 steps, policy version 1");
    expect(stdout).toContain("arclight train: engine embedded tiny, 1 training thread\n");
    // Log lines go to stderr, off the table and its ETA on stdout.
    expect(stdout).not.toMatch(/^\{"level"/m);
    expect(stderr).toMatch(/^\{"level":30,.*"msg":"step done"/m);
    expect(stdout).toMatch(/^ +1 .* ETA \d+s$/m);
    // The dashboard URL of the gateway child, with its random key in the fragment (docs/dashboard.md).
    expect(stdout).toMatch(/arclight train: dashboard http:\/\/127\.0\.0\.1:\d+\/ui\/#key=\S+/);
    const metrics = readFileSync(join(dir, "runs", "cli", "metrics.jsonl"), "utf8")
      .trim()
      .split("\n");
    expect(metrics).toHaveLength(1);
    expect(JSON.parse(metrics[0] as string).rollouts).toBe(2);
    expect(existsSync(join(dir, "runs", "cli", "gateway.db"))).toBe(true);

    // Again without --resume: refused before anything starts, the first run's files untouched.
    const before = readFileSync(join(dir, "runs", "cli", "metrics.jsonl"), "utf8");
    const again = await run(["train", "train.yaml"], dir).then(
      () => ({ code: 0, stderr: "" }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(
      "holds an earlier run (metrics.jsonl, checkpoints, gateway.db); continue it with --resume",
    );
    expect(readFileSync(join(dir, "runs", "cli", "metrics.jsonl"), "utf8")).toBe(before);

    // Resuming with another model shape: one line naming --resume, not a stack trace.
    const other = await run(["train", "train.yaml", "--resume", "--preset", "small"], dir).catch(
      (err: { code: number; stderr: string }) => err,
    );
    expect(other).toMatchObject({ code: 2, stderr: expect.stringContaining("arclight: --resume: checkpoint") });
    expect(other.stderr.trim().split("\n")).toHaveLength(1);

    // A run name that is not one folder under runs/, and a log level pino does not know: one line each, exit 2.
    writeFileSync(join(dir, "up.yaml"), `${yaml.replace("name: cli", "name: ..")}\n`);
    const up = await run(["train", "up.yaml"], dir).catch((err: { code: number; stderr: string }) => err);
    expect(up).toMatchObject({ code: 2, stderr: expect.stringContaining(`name (up.yaml) "..": letters, digits`) });
    const loud = await run(["train", "train.yaml", "--log-level", "loud"], dir).catch(
      (err: { code: number; stderr: string }) => err,
    );
    expect(loud).toMatchObject({ code: 2, stderr: expect.stringContaining("--log-level loud: expected one of fatal") });
  }, 150_000);

  it("arclight train --set overrides YAML keys; a bad override is one line naming --set", async () => {
    const dir = tempDir("arclight-train-set-");
    const yaml = writeCliRun(dir, "cli", 3, TEST_AGENT_CONTROLLER);

    // --set overrides keys of the YAML (here the run name, so the run goes to runs/renamed), the file unchanged;
    // a bad override is one line naming --set.
    const renamed = await run(
      ["train", "train.yaml", "--set", "name=renamed", "--set", "total_steps=1", "--set", "engine.train_threads=2"],
      dir,
    );
    expect(renamed.stdout).toContain("1 steps, policy version 1");
    expect(renamed.stdout).toContain("arclight train: engine embedded tiny, 2 training threads\n");
    expect(existsSync(join(dir, "runs", "renamed", "metrics.jsonl"))).toBe(true);
    const badSet = await run(["train", "train.yaml", "--set", "total_steps=many"], dir).catch(
      (err: { code: number; stderr: string }) => err,
    );
    expect(badSet).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("train.yaml with --set total_steps=many:"),
    });
    expect(badSet.stderr).toContain("total_steps");
    const noEq = await run(["train", "train.yaml", "--set", "total_steps"], dir).catch(
      (err: { code: number; stderr: string }) => err,
    );
    expect(noEq).toMatchObject({ code: 2, stderr: expect.stringContaining("--set total_steps: expected KEY=VALUE") });

    expect(readFileSync(join(dir, "train.yaml"), "utf8")).toBe(`${yaml}\n`);
  }, 180_000);

  it("arclight train stops with exit 1 and the agent's own output when every rollout of its first step fails", async () => {
    const dir = tempDir("arclight-train-fail-");
    const agent =
      "console.log('loading the agent'); console.error('Error: Cannot find module mytools'); process.exit(3)";
    writeCliRun(dir, "broken", 3, `{ command: [node, -e, ${JSON.stringify(agent)}] }`);
    const failed = await run(["train", "train.yaml"], dir).then(
      (out) => ({ code: 0, ...out }),
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stderr).toContain("arclight train: every rollout of step 1 failed (2 rollouts)");
    expect(failed.stderr).toContain("Error: Cannot find module mytools");
    expect(failed.stderr).toContain("the agent cannot run; check the config's controller section");
    expect(failed.stdout).not.toContain("steps, policy version");
    // Nothing was trained: no step was recorded.
    expect(existsSync(join(dir, "runs", "broken", "metrics.jsonl"))).toBe(false);

    // With the agent fixed, a rerun with --resume starts afresh: the failed run is moved aside (kept), not replayed
    // from its stored failed rollouts, which reuse the new run's ids (run-dir.test.ts covers a plain rerun).
    writeCliRun(dir, "broken", 1, TEST_AGENT_CONTROLLER);
    const fixed = await run(["train", "train.yaml", "--resume"], dir);
    expect(fixed.stdout).toContain("1 steps, policy version 1");
    expect(fixed.stderr).toMatch(
      /arclight train: runs\/broken held an earlier run that stopped before its first step; moved it to runs\/broken\.failed-\d{8}T\d{6}Z and starting afresh/,
    );
    const aside = readdirSync(join(dir, "runs")).filter((entry) => entry.startsWith("broken.failed-"));
    expect(aside).toHaveLength(1);
    expect(existsSync(join(dir, "runs", aside[0] as string, "gateway.db"))).toBe(true);
  }, 300_000);

  it("usage errors are one line starting with arclight:, exit 2 (unknown flag or command, bad YAML, no gateway)", async () => {
    const dir = tempDir("arclight-usage-");
    writeFileSync(join(dir, "bad.yaml"), "name: [\n x");
    // 1 step x 1 group of 2 rollouts over 2 inputs: the longest rollout id is NAME-e0-d1-1, so a name may have
    // 200 - 8 = 192 characters; before, a longer one failed at the first POST /api/rollouts.
    writeCliRun(dir, "r".repeat(193), 1, TEST_AGENT_CONTROLLER);
    const cases = [
      ["train", "--bogus", "x.yaml"],
      ["frob"],
      ["train", "bad.yaml"],
      ["train"],
      ["inspect", "r1", "--gateway-url", "http://127.0.0.1:1"],
      ["train", "train.yaml"],
      ["train", "train.yaml", "--set", "name=long", "--engine-seed", "-1"],
    ];
    const answers = await Promise.all(
      cases.map((args) =>
        run(args, dir).then(
          () => ({ code: 0, stderr: "" }),
          (err: { code: number; stderr: string }) => err,
        ),
      ),
    );
    expect(answers.map((a) => a.code)).toEqual([2, 2, 2, 2, 2, 2, 2]);
    for (const answer of answers) {
      expect(answer.stderr.trim().split("\n")).toHaveLength(1);
      expect(answer.stderr).toMatch(/^arclight: /);
    }
    expect(answers[0]?.stderr).toContain("unknown option '--bogus' (add --help for usage)");
    expect(answers[1]?.stderr).toContain("unknown command 'frob'");
    expect(answers[2]?.stderr).toContain("bad.yaml: invalid YAML (");
    expect(answers[3]?.stderr).toContain("missing required argument 'config'");
    expect(answers[4]?.stderr).toContain("cannot reach the gateway (GET /api/rollouts/r1: connect ECONNREFUSED");
    expect(answers[5]?.stderr).toContain(
      `name (train.yaml) "${"r".repeat(60)}"… (193 characters): at most 192 characters with these settings`,
    );
    expect(answers[5]?.stderr).toContain("(NAME-e0-d1-1)");
    expect(answers[6]?.stderr).toContain("--engine-seed -1: expected an integer from 0 to 4294967295");
    expect(existsSync(join(dir, "runs"))).toBe(false);
  }, 150_000);
});
