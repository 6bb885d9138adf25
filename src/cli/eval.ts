/**
 * @module `arclight eval CHECKPOINT --data FILE`: loads an embedded-engine checkpoint, runs the real agent once per
 * input through a fresh gateway (SQLite in a temporary directory, greedy validation mode) and the engine server, and
 * prints the mean reward, with a progress line as rollouts finish. The agent is run as the `controller` section of a
 * trainer YAML says (`--config`); without one, the bundled calculator agent runs as the demo runs it, its
 * `calculatorRollout` export in reused processes, with `examples/calculator/train.yaml`'s env_map.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { pino } from "pino";
import { readRolloutPath } from "../controller/agent-env.js";
import { startPhase } from "../demo/progress.js";
import { calculatorAgentClass } from "../demo/settings.js";
import type { Engine } from "../engine/engine.js";
import type { GatewayClient } from "../gateway/client.js";
import { type Rollout, ValidationFailed } from "../protocol/index.js";
import { createEngine } from "../run/engine-factory.js";
import { type StackOptions, withStack } from "../run/stack.js";
import { parseTrainerConfig, type TrainerConfig } from "../trainer/config.js";
import type { DataItem } from "../trainer/data-order.js";
import { describeFailedRollout } from "../trainer/failure-report.js";
import { localControllerSettings } from "../trainer/rollout-groups.js";
import { type RolloutsOnceResult, runRolloutsOnce, summariseRewards } from "../trainer/rollouts-once.js";
import { resolveAgentPaths } from "./agent-paths.js";
import { CliError } from "./cli-error.js";
import { listenForInterrupt, logLevel, positiveInt, readDataFile } from "./common-flags.js";
import { readConfigFile } from "./layered-config.js";

/** Flags of `arclight eval`. */
interface EvalFlags {
  data: string;
  limit?: string;
  config?: string;
  poolSize: string;
  logLevel: string;
}

/** The calculator's starter trainer config, `examples/calculator/train.yaml` of this package: eval's default agent. */
const CALCULATOR_CONFIG = fileURLToPath(new URL("../../examples/calculator/train.yaml", import.meta.url));

/** Where the calculator's agent command (`examples/calculator/agent.ts`, relative) runs: this package's root. */
const PACKAGE_ROOT = dirname(dirname(dirname(CALCULATOR_CONFIG)));

/**
 * The trainer config whose controller section runs the agent: `--config` YAML, or the calculator's train.yaml.
 * @throws {CliError} naming --config for a file that cannot be read or parsed
 */
function agentConfig(flags: EvalFlags): Readonly<TrainerConfig> {
  const path = flags.config ?? CALCULATOR_CONFIG;
  const raw = readConfigFile(path, "trainer") as { controller?: Record<string, unknown> };
  try {
    if (flags.config !== undefined) {
      const config = parseTrainerConfig(raw);
      return Object.freeze({ ...config, controller: resolveAgentPaths(config.controller, dirname(resolve(path))) });
    }
    // The bundled calculator: its export in reused processes instead of one new Node process per input.
    const { command: _perProcess, ...controller } = raw.controller ?? {};
    const reused = { ...controller, agent_class: calculatorAgentClass().agentClass, reuse_processes: true };
    return Object.freeze(parseTrainerConfig({ ...raw, controller: reused }));
  } catch (err) {
    if (err instanceof ValidationFailed) throw new CliError(`--config ${path}: ${err.message}`);
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

/**
 * Loads the checkpoint to evaluate.
 * @throws {CliError} naming CHECKPOINT, with a hint when the run's checkpoint directory was given instead of its
 *   engine/ subdirectory
 */
async function loadEngine(checkpoint: string): Promise<Engine> {
  try {
    return await createEngine({ kind: "embedded", checkpoint: resolve(checkpoint) });
  } catch (err) {
    const inner = join(checkpoint, "engine");
    const hint = existsSync(join(inner, "config.json")) ? `; did you mean ${inner}?` : "";
    throw new CliError(
      `CHECKPOINT ${checkpoint}: not an embedded-engine checkpoint (${(err as Error).message})${hint}`,
    );
  }
}

/** Prints the mean reward, the solved share and the first failure; exit 1 when every rollout failed. */
async function report(client: GatewayClient, result: RolloutsOnceResult, dataFlag: string): Promise<void> {
  const summary = summariseRewards(result.rewards);
  const failed = result.failedIds.length;
  console.log(
    `arclight eval: ${summary.count} inputs from ${dataFlag}: reward ${summary.mean.toFixed(3)}, ` +
      `solved (reward >= 1) ${(summary.solved * 100).toFixed(1)}%, failed rollouts ${failed}`,
  );
  const firstFailed = result.failedIds[0];
  if (firstFailed !== undefined) console.error(`arclight eval: ${await describeFailedRollout(client, firstFailed)}`);
  if (failed === summary.count) {
    console.error("arclight eval: every rollout failed: check the config's controller.command (see above)");
    process.exitCode = 1;
  }
}

/** Runs the command. */
async function evaluateCheckpoint(checkpoint: string, flags: EvalFlags): Promise<void> {
  const limit = flags.limit === undefined ? undefined : positiveInt("--limit", flags.limit);
  const poolSize = positiveInt("--pool-size", flags.poolSize);
  const items = readDataFile("--data", flags.data).slice(0, limit);
  if (items.length === 0) throw new CliError(`--data ${flags.data}: no inputs (the file has no JSON lines)`);
  const engine = await loadEngine(checkpoint);
  const config = agentConfig(flags);
  checkEnvMapPaths(items, config, flags.data);
  const logger = pino({ level: logLevel(flags.logLevel) });
  if (flags.config === undefined) {
    console.error(
      "arclight eval: no --config: running the bundled calculator agent (examples/calculator/train.yaml); " +
        "give --config YOUR_TRAIN.yaml to run your own agent",
    );
  }
  const workDir = mkdtempSync(join(tmpdir(), "arclight-eval-"));
  const interrupt = listenForInterrupt("eval", "stopping the agents, engine and gateway");
  const stackOptions: StackOptions = {
    runDir: workDir,
    modelName: "policy",
    engine: async () => engine,
    gatewayArgs: ["--val-temperature", "0"],
    // The bundled config's agent command is relative to the package root; a --config one to the working directory.
    controller: {
      poolSize,
      settings: {
        ...localControllerSettings(config.controller),
        ...(flags.config === undefined ? { cwd: PACKAGE_ROOT } : {}),
      },
      ...(flags.config === undefined ? { baseEnv: { ...process.env, ...calculatorAgentClass().env } } : {}),
    },
    logger,
    closeOnAbort: interrupt.signal,
  };
  try {
    await withStack(stackOptions, async (stack) => {
      await stack.client.upsertModels(stack.serving.endpoints.map((endpoint) => ({ model: "policy", endpoint })));
      const phase = startPhase("eval", items.length, process.stderr);
      const result = await runRolloutsOnce(stack.client, items, {
        prefix: "eval",
        isTrain: false,
        config,
        policyVersion: engine.policyVersion,
        onProgress: (done) => phase.update(done),
        signal: interrupt.signal,
      });
      phase.finish(`${items.length} rollouts ended`);
      await report(stack.client, result, flags.data);
    });
  } catch (err) {
    if (!interrupt.signal.aborted) throw err;
    console.error("arclight eval: stopped");
    process.exitCode = 130;
  } finally {
    interrupt.dispose();
    rmSync(workDir, { recursive: true, force: true });
  }
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
      "checkpoint directory (config.json + model.safetensors), e.g. runs/demo/checkpoints/step-000008/engine",
    )
    .requiredOption("--data <file>", "JSONL file of inputs (required), e.g. examples/calculator/data/val.jsonl")
    .option("--limit <n>", "only the first N inputs")
    .option(
      "--config <file>",
      "trainer YAML whose controller section runs the agent (default: the bundled calculator agent, in reused processes)",
    )
    .option("--pool-size <n>", "agent processes at once", "8")
    .option("--log-level <level>", "pino log level of the components", "warn")
    .action(evaluateCheckpoint);
}
