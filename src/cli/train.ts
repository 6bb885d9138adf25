/**
 * @module `arclight train CONFIG.yaml`: trains with one command. Without URLs it starts what it needs (gateway child
 * process on SQLite under runs/NAME/, embedded engine and its OpenAI server, local controller); with `--gateway-url`
 * and/or `--engine-url` it connects to running ones.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { pino } from "pino";
import { parse as parseYaml } from "yaml";
import { CheckpointInvalid } from "../engine/checkpoint-error.js";
import { MODEL_PRESETS } from "../engine/embedded/config.js";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import { GatewayClient } from "../gateway/client.js";
import { dashboardUrl } from "../gateway/dashboard/url.js";
import { ValidationFailed } from "../protocol/index.js";
import { loadLatestCheckpoint } from "../trainer/checkpoint.js";
import { parseTrainerConfig, type TrainerConfig } from "../trainer/config.js";
import { consoleReporter } from "../trainer/console-report.js";
import { runTraining, totalStepsOf } from "../trainer/loop.js";
import { combineReporters, RunPoster } from "../trainer/run-poster.js";
import { collocatedServing, type PolicyServing, remoteServing } from "../trainer/serving.js";
import { checkRunName, listenForInterrupt, logLevel, readDataFile } from "./common-flags.js";
import { CliError } from "./program.js";
import { startController, startEngineServer, startGatewayChild } from "./train-stack.js";

/** Flags of `arclight train`. */
interface TrainFlags {
  resume?: boolean;
  gatewayUrl?: string;
  key?: string;
  engineUrl?: string;
  controller: boolean;
  preset: string;
  engineSeed: string;
  modelName: string;
  logLevel: string;
}

/** Reads and validates the YAML config; data paths are resolved against the config file's directory. */
function loadConfig(path: string): Readonly<TrainerConfig> {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, "utf8"));
  } catch (err) {
    throw new CliError(`${path}: ${(err as Error).message}`);
  }
  try {
    const config = parseTrainerConfig(raw ?? {});
    const base = dirname(resolve(path));
    const data = {
      train_path: resolve(base, config.data.train_path),
      val_path: config.data.val_path === null ? null : resolve(base, config.data.val_path),
    };
    return Object.freeze({ ...config, data });
  } catch (err) {
    if (err instanceof ValidationFailed) throw new CliError(`${path}: ${err.message}`);
    throw err;
  }
}

/** Builds the engine to train: a fresh preset with a seed. */
async function buildEngine(flags: TrainFlags): Promise<EmbeddedEngine> {
  if (!(flags.preset in MODEL_PRESETS)) {
    throw new CliError(`--preset ${flags.preset}: expected one of ${Object.keys(MODEL_PRESETS).join(", ")}`);
  }
  const seed = Number(flags.engineSeed);
  if (!Number.isInteger(seed)) throw new CliError(`--engine-seed ${flags.engineSeed}: expected an integer`);
  return EmbeddedEngine.create({ config: flags.preset as keyof typeof MODEL_PRESETS, seed });
}

/** What in runs/NAME shows an earlier run. */
const RUN_FILES = ["metrics.jsonl", "checkpoints", "gateway.db"];

/**
 * A fresh run must not reuse an earlier run's directory: its gateway already holds rollouts with the ids this run
 * would create, and its checkpoints and metrics would be overwritten. `--resume` continues it instead; with
 * `--resume` and no checkpoint there, say that the run starts at step 0.
 * @throws {CliError} when runs/NAME holds an earlier run and `--resume` was not given
 */
function checkRunDir(runDir: string, name: string, resume: boolean): void {
  const found = RUN_FILES.filter((file) => existsSync(join(runDir, file)));
  if (!resume && found.length > 0) {
    throw new CliError(
      `run ${name}: ${runDir} holds an earlier run (${found.join(", ")}); continue it with --resume, ` +
        "or set another name: in the config (or delete the folder)",
    );
  }
  if (resume && loadLatestCheckpoint(runDir) === null) {
    console.error(`arclight train: --resume: no checkpoint in ${runDir}; starting at step 0`);
  }
}

/** Runs the command; everything started here is stopped before returning. */
async function train(configPath: string, flags: TrainFlags): Promise<void> {
  const config = loadConfig(configPath);
  checkRunName(`name (${configPath})`, config.name);
  const logger = pino({ level: logLevel(flags.logLevel) });
  const runDir = resolve("runs", config.name);
  checkRunDir(runDir, config.name, flags.resume === true);
  const trainData = readDataFile("data.train_path", config.data.train_path);
  const valData = config.data.val_path === null ? null : readDataFile("data.val_path", config.data.val_path);
  const cleanups: (() => Promise<void> | void)[] = [];
  const interrupt = listenForInterrupt("train", "stopping after the current operation (agents, engine, gateway)");
  cleanups.push(() => interrupt.dispose());
  try {
    // The engine first: a bad --preset or --engine-seed is refused before anything is started or written.
    const engine = await buildEngine(flags);
    cleanups.push(() => engine.dispose());
    let gatewayUrl = flags.gatewayUrl;
    let key = flags.key ?? process.env.ARCLIGHT_KEY ?? process.env.AGL_KEY ?? "";
    if (gatewayUrl === undefined) {
      const child = await startGatewayChild(join(runDir, "gateway.db"), flags.modelName);
      cleanups.push(() => child.stop());
      gatewayUrl = child.url;
      key = child.key;
    }
    const client = new GatewayClient({ baseUrl: gatewayUrl, key });
    cleanups.push(() => client.close());
    let serving: PolicyServing;
    if (flags.engineUrl !== undefined) {
      serving = remoteServing([flags.engineUrl], join(runDir, "weights"));
    } else {
      const { server, endpoint } = await startEngineServer(engine, flags.modelName);
      cleanups.push(() => server.close());
      serving = collocatedServing(endpoint);
    }
    if (flags.controller) {
      const stateFile = join(runDir, "controller-state.json");
      const poolSize = config.controller.pool_size;
      const controller = startController(client, { gatewayUrl, key, poolSize, stateFile, logger });
      cleanups.push(() => controller.shutdown());
    }
    console.log(`arclight train: run ${config.name}, gateway ${gatewayUrl}, engine ${serving.endpoints.join(", ")}`);
    console.log(`arclight train: dashboard ${dashboardUrl(gatewayUrl, flags.gatewayUrl === undefined ? key : "")}`);
    const poster = new RunPoster(client, config.name, logger);
    poster.start({ ...config }, totalStepsOf(config, trainData.length), join(runDir, "metrics.jsonl"));
    cleanups.push(() => poster.flush());
    const summary = await runTraining({
      config,
      client,
      engine,
      serving,
      trainData,
      valData,
      runDir,
      resume: flags.resume === true,
      modelName: flags.modelName,
      logger,
      reporter: combineReporters(consoleReporter(), poster),
      signal: interrupt.signal,
    });
    console.log(
      `arclight train: ${summary.steps} steps, policy version ${summary.policyVersion}, metrics in ${runDir}`,
    );
  } catch (err) {
    if (interrupt.signal.aborted) {
      console.error("arclight train: stopped (resume with --resume from the latest checkpoint)");
      process.exitCode = 130;
      return;
    }
    if (err instanceof RangeError) throw new CliError(err.message);
    if (err instanceof CheckpointInvalid) {
      throw new CliError(`--resume: ${err.message} (resume with the --preset the run was trained with)`);
    }
    throw err;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

/**
 * Registers `arclight train`.
 * @param program - the root commander program
 */
export function registerTrain(program: Command): void {
  program
    .command("train")
    .description("Train a policy with GRPO from agent rollouts (starts gateway, engine and controller as needed)")
    .argument("<config>", "trainer YAML config (see README, Training)")
    .option("--resume", "continue from runs/NAME's latest checkpoint")
    .option("--gateway-url <url>", "use a running gateway instead of starting one")
    .option("--key <key>", "API key of that gateway (also ARCLIGHT_KEY or AGL_KEY)")
    .option("--engine-url <url>", "a running engine server's /v1 URL to publish weights to (POST /v1/load_weights)")
    .option("--no-controller", "do not start a local controller (one already watches the gateway)")
    .option("--preset <name>", "embedded engine model preset", "tiny")
    .option("--engine-seed <n>", "weight-init seed of the embedded engine", "0")
    .option("--model-name <name>", "model name the gateway proxy serves", "policy")
    .option("--log-level <level>", "pino log level", "warn")
    .action(train);
}
