/**
 * `arclight sft` and `arclight train --init-from` as a user runs them: calculator rollouts recorded through a real
 * gateway from the scripted teacher (real agent processes under a real controller), then the CLI as a child process
 * selects them over HTTP, fine-tunes a fresh embedded model, validates with real greedy rollouts before and after,
 * and saves a checkpoint that `arclight train --init-from` starts RL from.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, stringify } from "yaml";
import {
  calculatorAgentClass,
  calculatorAgentCommand,
  demoTrainerConfig,
  isDemoProblem,
  QUICK_BUDGET,
} from "../src/demo/settings.js";
import { startTeacherChild } from "../src/demo/teacher-child.js";
import { EmbeddedEngine } from "../src/engine/embedded/engine.js";
import { startTestGateway, type TestGateway } from "../src/gateway/testing/serve.js";
import { type Stack, startStack } from "../src/run/stack.js";
import { type ProcessResult, runProcess } from "../src/testing/run-process.js";
import { readJsonl } from "../src/trainer/data-order.js";
import { ChatExampleSchema } from "../src/trainer/export-chat.js";
import { TokenExampleSchema } from "../src/trainer/export-tokens.js";
import { localControllerSettings } from "../src/trainer/rollout-groups.js";
import { runRolloutsOnce } from "../src/trainer/rollouts-once.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const TSX = new URL("../node_modules/tsx/dist/loader.mjs", import.meta.url).href;
const DATA = fileURLToPath(new URL("../examples/calculator/data/", import.meta.url));
const workDir = mkdtempSync(join(tmpdir(), "arclight-sft-test-"));
let gateway: TestGateway;
let stack: Stack;

function cli(args: string[]): Promise<ProcessResult> {
  return runProcess([process.execPath, "--import", TSX, MAIN, ...args], {
    cwd: workDir,
    env: { PATH: process.env.PATH },
  });
}

/** Records 24 teacher rollouts (symbols problems) through a real gateway: the traces SFT reads. */
beforeAll(async () => {
  gateway = await startTestGateway({ key: "test-key", model_name: "policy" });
  const engine = await EmbeddedEngine.create({ config: "tiny", seed: 0 });
  const config = demoTrainerConfig("rec", QUICK_BUDGET, engine.contextLength);
  stack = await startStack({
    runDir: workDir,
    modelName: "policy",
    engine: async () => engine,
    gateway: { url: gateway.url, key: "test-key" },
    // The controller runs only the recipe's own agent (docs/security.md).
    controller: {
      poolSize: 8,
      settings: { poll_interval_seconds: 0.05, ...localControllerSettings(config.controller) },
      baseEnv: { ...process.env, ...calculatorAgentClass().env },
    },
    logger: pino({ level: "silent" }),
  });
  const teacher = await startTeacherChild(0);
  try {
    await stack.client.upsertModels([{ model: "policy", endpoint: teacher.endpoint, version: 0 }]);
    const items = readJsonl(join(DATA, "train.jsonl")).filter(isDemoProblem).slice(0, 24);
    const result = await runRolloutsOnce(stack.client, items, {
      prefix: "teacher",
      isTrain: true,
      config,
      policyVersion: 0,
    });
    expect(result.failedIds).toEqual([]);
    await stack.client.deleteModels();
  } finally {
    await teacher.stop();
  }
}, 240_000);

afterAll(async () => {
  await stack?.close();
  await gateway?.close();
  rmSync(workDir, { recursive: true, force: true });
});

/** Writes a YAML config into the work dir. */
function writeConfig(name: string, config: unknown): string {
  const path = join(workDir, name);
  writeFileSync(path, stringify(config));
  return path;
}

function metricsOf(path: string): Record<string, number | null>[] {
  return readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
}

describe("arclight sft", () => {
  it("fine-tunes a fresh model on the selected teacher traces, validates before and after, saves a checkpoint", async () => {
    const val = readJsonl(join(DATA, "val.jsonl")).filter(isDemoProblem).slice(0, 4);
    writeFileSync(join(workDir, "val.jsonl"), val.map((item) => `${JSON.stringify(item.input)}\n`).join(""));
    const config = writeConfig("sft.yaml", {
      name: "calc-sft",
      select: { id_prefix: "teacher-", min_reward: 1, best_of_n: true },
      aggregator: { level: "trajectory", max_prompt_length: 128, max_response_length: 128 },
      sft: { steps: 30, batch_size: 4, learning_rate: 3e-3, val_fraction: 0.25, log_interval: 10 },
      validation: {
        data_path: "val.jsonl",
        controller: {
          command: calculatorAgentCommand(),
          env_map: { QUESTION: "input.question", ANSWER: "input.answer" },
          pool_size: 4,
        },
        rollout_timeout_seconds: 120,
      },
    });
    const result = await cli(["sft", config, "--gateway-url", gateway.url, "--key", "test-key"]);
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const runDir = join(workDir, "runs", "calc-sft");
    const summary = JSON.parse(readFileSync(join(runDir, "sft-summary.json"), "utf8"));
    // 24 teacher rollouts, one per problem, every one correct: all selected; 6 rows held out (0.25 of 24).
    expect(summary).toMatchObject({ matched: 24, selected: 24, trainRows: 18, heldOutRows: 6, steps: 30 });
    expect(summary.heldOutLossAfter).toBeLessThan(summary.heldOutLossBefore);
    expect(summary.lastLoss).toBeLessThan(summary.firstLoss);
    expect(typeof summary.rewardBefore).toBe("number");
    expect(typeof summary.rewardAfter).toBe("number");
    const metrics = metricsOf(join(runDir, "metrics.jsonl"));
    expect(metrics.map((m) => m.step)).toEqual([0, 10, 20, 30, 30]);
    expect(metrics[0]).toEqual({
      step: 0,
      "val/loss": summary.heldOutLossBefore,
      "val/reward_mean": summary.rewardBefore,
    });
    expect(metrics.at(-1)).toEqual({
      step: 30,
      "val/loss": summary.heldOutLossAfter,
      "val/reward_mean": summary.rewardAfter,
    });
    expect(existsSync(join(runDir, "checkpoint", "model.safetensors"))).toBe(true);
    expect(result.stdout).toContain("24 of 24 matching rollouts selected");

    // --init-from: RL starts from the SFT checkpoint (one GRPO step), and a wrong directory is one line naming the flag.
    const train = writeConfig("train.yaml", {
      name: "calc-rl",
      data: { train_path: join(DATA, "train.jsonl") },
      train_batch_size: 2,
      n: 2,
      total_steps: 1,
      val_interval: 0,
      checkpoint_interval: 1,
      controller: {
        command: calculatorAgentCommand(),
        env_map: { QUESTION: "input.question", ANSWER: "input.answer" },
      },
      aggregator: { level: "trajectory", max_prompt_length: 128, max_response_length: 128 },
    });
    const rl = await cli(["train", train, "--init-from", join(runDir, "checkpoint")]);
    expect(rl.code, rl.stderr + rl.stdout).toBe(0);
    expect(rl.stdout).toContain("1 steps");
    expect(rl.stdout).toContain(`engine embedded checkpoint ${join(runDir, "checkpoint")}, 1 training thread\n`);
    const other = writeConfig("train-bad.yaml", { ...parseYaml(readFileSync(train, "utf8")), name: "calc-rl-bad" });
    const bad = await cli(["train", other, "--init-from", join(workDir, "nowhere")]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`--init-from ${join(workDir, "nowhere")}`);
  }, 600_000);

  it("refuses a config without a source, naming the key", async () => {
    const config = writeConfig("nosource.yaml", { name: "x" });
    const result = await cli(["sft", config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("source: set exactly one of gateway_url and db_path");
    // --set fills the missing key: the config now fails on the next thing (a db file that does not exist), not on
    // source; a bad value names --set.
    const withSource = await cli(["sft", config, "--set", "source.db_path=missing.db"]);
    expect(withSource.code).toBe(2);
    expect(withSource.stderr).not.toContain("source: set exactly one");
    expect(withSource.stderr).toContain("missing.db");
    const badSteps = await cli(["sft", config, "--set", "source.db_path=x.db", "--set", "sft.steps=0"]);
    expect(badSteps.code).toBe(2);
    expect(badSteps.stderr).toContain("with --set source.db_path=x.db --set sft.steps=0:");
  });

  it("refuses a name too long for its validation rollouts' ids, naming the key, before it starts anything", async () => {
    writeFileSync(join(workDir, "val3.jsonl"), '{"question":"1+1","answer":2}\n'.repeat(3));
    // Three validation inputs: the longest id is NAME-val-before-d2-0, so a name may have 200 - 16 = 184 characters.
    // A longer one would train, then fail at the first validation rollout.
    const name = "s".repeat(185);
    const controller = { command: calculatorAgentCommand(), env_map: { QUESTION: "input.question" } };
    const config = writeConfig("long.yaml", {
      name,
      source: { db_path: "x.db" },
      validation: { data_path: "val3.jsonl", controller },
    });
    const result = await cli(["sft", config]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`"${"s".repeat(60)}"… (185 characters): at most 184 characters`);
    expect(result.stderr).toContain("(NAME-val-before-d2-0)");
    expect(existsSync(join(workDir, "runs", name))).toBe(false);
  });
});

describe("arclight export", () => {
  it("writes one chat fine-tuning example per rollout: the conversation with tools, ending with the assistant", async () => {
    const out = join(workDir, "chat.jsonl");
    const result = await cli([
      "export",
      "--gateway-url",
      gateway.url,
      "--key",
      "test-key",
      "--format",
      "chat",
      "--out",
      out,
    ]);
    expect(result.code, result.stderr).toBe(0);
    const lines = readFileSync(out, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(24);
    for (const line of lines) expect(ChatExampleSchema.safeParse(line).success).toBe(true);
    // The calculator agent calls its tool, reads the result, then answers: that whole exchange is in the example.
    const roles = lines[0].messages.map((m: { role: string }) => m.role);
    expect(roles.slice(-3)).toEqual(["assistant", "tool", "assistant"]);
    expect(lines[0].messages.at(-3).tool_calls[0].function.name).toBe(lines[0].tools[0].function.name);
    expect(result.stdout).toContain("24 chat lines written");
  });

  it("writes token-level rows whose ids and logprobs are exactly the recorded calls'", async () => {
    const out = join(workDir, "tokens.jsonl");
    const args = ["export", "--gateway-url", gateway.url, "--key", "test-key", "--format", "tokens", "--out", out];
    const result = await cli([...args, "--id-prefix", "teacher-d1", "--min-reward", "1"]);
    expect(result.code, result.stderr).toBe(0);
    const lines = readFileSync(out, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    // One trajectory row per rollout whose id starts with teacher-d1 (every teacher rollout scored 1).
    const expected = (await stack.client.listAllRollouts()).filter((r) => r.rollout_id.startsWith("teacher-d1"));
    expect(expected.length).toBeGreaterThan(1);
    expect(lines.map((line) => line.rollout_id).sort()).toEqual(expected.map((r) => r.rollout_id).sort());
    for (const line of lines) {
      expect(TokenExampleSchema.safeParse(line).success).toBe(true);
      const calls = (await stack.client.getTripletEvents(line.rollout_id))
        .filter((e) => e.event_type === "model_request")
        .sort((a, b) => a.sequence - b.sequence)
        .map(
          (e) => e.data as { prompt_token_ids: number[]; response_token_ids: number[]; response_log_probs: number[] },
        );
      expect(line.prompt_token_ids).toEqual(calls[0]?.prompt_token_ids);
      const masked = (values: unknown[]) => values.filter((_, t) => line.response_mask[t] === 1);
      expect(masked(line.response_token_ids)).toEqual(calls.flatMap((c) => c.response_token_ids));
      expect(masked(line.logprobs)).toEqual(calls.flatMap((c) => c.response_log_probs));
      expect(line.reward).toBe(1);
    }
  });

  it("refuses an --out in a missing folder, or a folder, before reading anything, naming --out", async () => {
    const missing = await cli([
      "export",
      "--db",
      "x.db",
      "--format",
      "chat",
      "--out",
      join(workDir, "nowhere", "x.jsonl"),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      `--out ${join(workDir, "nowhere", "x.jsonl")}: folder ${join(workDir, "nowhere")} does not exist`,
    );
    expect(missing.stderr.trim().split("\n")).toHaveLength(1);
    const folder = await cli(["export", "--db", "x.db", "--format", "chat", "--out", workDir]);
    expect(folder.code).toBe(2);
    expect(folder.stderr).toContain(`--out ${workDir}: is a folder; name a file`);
  });

  it("refuses an unknown format, naming the flag", async () => {
    const result = await cli(["export", "--db", "x.db", "--format", "csv", "--out", "x"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--format csv: expected chat or tokens");
  });
});
