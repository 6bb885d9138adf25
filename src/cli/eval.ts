/**
 * @module `arclight eval CHECKPOINT --data FILE`: loads an embedded-engine checkpoint, runs the real agent once per
 * input through a fresh gateway (SQLite in a temporary directory, greedy validation mode) and the engine server, and
 * prints the mean reward. The agent is the bundled calculator unless `--config` names a trainer YAML whose
 * `controller` section says what to run.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { pino } from "pino";
import { parse as parseYaml } from "yaml";
import { readRolloutPath } from "../controller/agent-env.js";
import { runRolloutBatch, summariseRewards } from "../demo/rollout-batch.js";
import { demoTrainerConfig, QUICK_BUDGET } from "../demo/settings.js";
import { type DemoStack, startDemoStack } from "../demo/stack.js";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import type { GatewayClient } from "../gateway/client.js";
import { type Rollout, ValidationFailed } from "../protocol/index.js";
import { parseTrainerConfig, type TrainerConfig } from "../trainer/config.js";
import type { DataItem } from "../trainer/data-order.js";
import { listenForInterrupt, logLevel, positiveInt, readDataFile } from "./common-flags.js";
import { CliError } from "./program.js";

/** Flags of `arclight eval`. */
interface EvalFlags {
  data: string;
  limit?: string;
  config?: string;
  poolSize: string;
  logLevel: string;
}

/** The trainer config whose controller section runs the agent: `--config` YAML, or the bundled calculator. */
function agentConfig(flags: EvalFlags, contextLength: number): Readonly<TrainerConfig> {
  if (flags.config === undefined) return demoTrainerConfig("eval", QUICK_BUDGET, contextLength);
  try {
    return Object.freeze(parseTrainerConfig(parseYaml(readFileSync(flags.config, "utf8")) ?? {}));
  } catch (err) {
    if (err instanceof ValidationFailed || err instanceof Error)
      throw new CliError(`--config ${flags.config}: ${err.message}`);
    throw err;
  }
}

/**
 * Checks that every input has the fields the agent's `env_map` reads from `input.…`, so a wrong data file is named
 * before any agent starts (the controller would otherwise fail each rollout with a warning).
 * @throws {CliError} naming the file, the input's position and the env var on the first missing field
 */
function checkEnvMapPaths(items: readonly DataItem[], config: Readonly<TrainerConfig>, dataFlag: string): void {
  const inputPaths = Object.entries(config.controller.env_map).filter(([, path]) => path.startsWith("input."));
  for (const item of items) {
    for (const [envName, path] of inputPaths) {
      try {
        readRolloutPath({ input: item.input } as unknown as Rollout, path, envName);
      } catch {
        throw new CliError(
          `--data ${dataFlag}: input ${item.index + 1} has no ${path.slice("input.".length)} ` +
            `(the agent's env_map ${envName}: ${path})`,
        );
      }
    }
  }
}

/** Runs the command. */
async function evaluateCheckpoint(checkpoint: string, flags: EvalFlags): Promise<void> {
  const limit = flags.limit === undefined ? undefined : positiveInt("--limit", flags.limit);
  const poolSize = positiveInt("--pool-size", flags.poolSize);
  const items = readDataFile("--data", flags.data).slice(0, limit);
  if (items.length === 0) throw new CliError(`--data ${flags.data}: no inputs (the file has no JSON lines)`);
  let engine: EmbeddedEngine;
  try {
    engine = await EmbeddedEngine.load(resolve(checkpoint));
  } catch (err) {
    const inner = join(checkpoint, "engine");
    const hint = existsSync(join(inner, "config.json")) ? `; did you mean ${inner}?` : "";
    throw new CliError(
      `CHECKPOINT ${checkpoint}: not an embedded-engine checkpoint (${(err as Error).message})${hint}`,
    );
  }
  const config = agentConfig(flags, engine.contextLength);
  checkEnvMapPaths(items, config, flags.data);
  const level = logLevel(flags.logLevel);
  const workDir = mkdtempSync(join(tmpdir(), "arclight-eval-"));
  const interrupt = listenForInterrupt("eval", "stopping the agents, engine and gateway");
  let stack: DemoStack | undefined;
  const stopOnAbort = () => void stack?.close();
  interrupt.signal.addEventListener("abort", stopOnAbort);
  try {
    stack = await startDemoStack({ runDir: workDir, engine, modelName: "policy", poolSize, logger: pino({ level }) });
    interrupt.signal.throwIfAborted();
    await stack.client.upsertModels([{ model: "policy", endpoint: stack.engineEndpoint, version: 0 }]);
    const batch = await runRolloutBatch(stack.client, items, {
      prefix: "eval",
      isTrain: false,
      config,
      policyVersion: engine.policyVersion,
      signal: interrupt.signal,
    });
    const summary = summariseRewards(batch.rewards);
    console.log(
      `arclight eval: ${summary.count} inputs from ${flags.data}: reward ${summary.mean.toFixed(3)}, ` +
        `solved (reward >= 1) ${(summary.solved * 100).toFixed(1)}%, failed rollouts ${batch.failed}`,
    );
    const firstFailed = batch.failedIds[0];
    if (firstFailed !== undefined) console.error(await failureReport(stack.client, firstFailed));
    if (batch.failed === items.length) {
      console.error("arclight eval: every rollout failed: check the config's controller.command (see above)");
      process.exitCode = 1;
    }
  } catch (err) {
    if (!interrupt.signal.aborted) throw err;
    console.error("arclight eval: stopped");
    process.exitCode = 130;
  } finally {
    interrupt.signal.removeEventListener("abort", stopOnAbort);
    interrupt.dispose();
    await stack?.close();
    rmSync(workDir, { recursive: true, force: true });
  }
}

/**
 * What the controller recorded about a failed rollout (its `log` event: exit code or signal, reason, and the tail of
 * the agent's output), for the terminal: the gateway's database is deleted when eval ends.
 */
async function failureReport(client: GatewayClient, rolloutId: string): Promise<string> {
  const [log] = await client.getEvents(rolloutId, { eventType: "log" });
  if (log === undefined) {
    return (
      `arclight eval: rollout ${rolloutId} failed with no output recorded: the agent command may not have started ` +
      "(see the controller's log line above, e.g. spawn … ENOENT)"
    );
  }
  const data = (log.data ?? {}) as { reason?: unknown; text?: unknown };
  const tail = String(data.text ?? "")
    .trimEnd()
    .split("\n")
    .slice(-12)
    .join("\n  ");
  return `arclight eval: rollout ${rolloutId} failed (${String(data.reason ?? "failed")}); its last output:\n  ${tail}`;
}

/**
 * Registers `arclight eval`.
 * @param program - the root commander program
 */
export function registerEval(program: Command): void {
  program
    .command("eval")
    .description("Evaluate an embedded-engine checkpoint: run the agent once per input (greedy) and print the reward")
    .argument(
      "<checkpoint>",
      "checkpoint directory (config.json + model.safetensors), e.g. runs/demo/checkpoints/step-000010/engine",
    )
    .requiredOption("--data <file>", "JSONL file of inputs, e.g. examples/calculator/data/val.jsonl")
    .option("--limit <n>", "only the first N inputs")
    .option("--config <file>", "trainer YAML whose controller section runs the agent (default: the calculator agent)")
    .option("--pool-size <n>", "agent processes at once", "8")
    .option("--log-level <level>", "pino log level of the components", "warn")
    .action(evaluateCheckpoint);
}
