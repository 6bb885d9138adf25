/**
 * @module `arclight train CONFIG.yaml`: trains with one command. Without URLs it starts what it needs (gateway child
 * process on SQLite under runs/NAME/, embedded engine and its OpenAI server, local controller); with `--gateway-url`
 * and/or `--engine-url` it connects to running ones.
 */

import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { type Logger, pino } from "pino";
import { CheckpointInvalid } from "../engine/checkpoint-error.js";
import type { Engine } from "../engine/engine.js";
import { TorchWorkerError } from "../engine/remote/worker-client.js";
import { TorchPackageMissing } from "../engine/remote/worker-process.js";
import { dashboardUrl } from "../gateway/dashboard/url.js";
import type { GroupJudge } from "../judge/apply.js";
import { createEngine, describeEngineSpec, type EngineSpec } from "../run/engine-factory.js";
import { createEngineFrom, specFrom } from "../run/init-from.js";
import { type Stack, type StackOptions, withStack } from "../run/stack.js";
import { CheckpointPoliciesMismatch } from "../trainer/checkpoint.js";
import type { TrainerConfig } from "../trainer/config.js";
import { consoleReporter } from "../trainer/console-report.js";
import type { DataItem } from "../trainer/data-order.js";
import { AllRolloutsFailed, describeFirstFailed } from "../trainer/failure-report.js";
import { checkContextFits, runTraining, type TrainSummary, totalStepsOf } from "../trainer/loop.js";
import { localControllerSettings } from "../trainer/rollout-groups.js";
import { longestTrainingRolloutIds } from "../trainer/run-name-room.js";
import { combineReporters, RunPoster } from "../trainer/run-poster.js";
import { trackingReporter } from "../trainer/tracking-reporter.js";
import { VllmSamplerError } from "../trainer/vllm-serving.js";
import { CliError } from "./cli-error.js";
import { checkRunName, checkRunNameRoom, listenForInterrupt, logLevel, readDataFile } from "./common-flags.js";
import { type EngineFlags, engineSpecOf } from "./engine-spec.js";
import { isDirectory } from "./eval-flags.js";
import { frozenAgentsStack, perAgentStack } from "./frozen-agents.js";
import { temperatureArgs } from "./gateway-child-flags.js";
import { judgeOf } from "./judge-settings.js";
import { resolveKey } from "./key-source.js";
import { collectSetFlag } from "./layered-config.js";
import { prepareRunDir } from "./run-dir.js";
import { type SamplerFlags, vllmSamplerOf } from "./sampler-flags.js";
import { addTrackingOptions, startTrackers, type TrackingFlags } from "./tracking-flags.js";
import { loadTrainerConfigFile } from "./trainer-config-file.js";

/** Flags of `arclight train`. */
interface TrainFlags extends SamplerFlags, EngineFlags, TrackingFlags {
  resume?: boolean;
  /** An engine checkpoint to start from (weights only; a fresh optimiser). */
  initFrom?: string;
  gatewayUrl?: string;
  key?: string;
  keyFile?: string;
  engineUrl?: string;
  controller: boolean;
  modelName: string;
  logLevel: string;
  /** `--set KEY=VALUE` overrides of the YAML, in order. */
  set?: string[];
  /** `--val-temperature` of the gateway child (validation rollouts' sampling temperature). */
  valTemperature?: string;
  /** `--train-temperature` of the gateway child (training rollouts' sampling temperature). */
  trainTemperature?: string;
}

/**
 * The engine started from `--init-from`'s checkpoint.
 * @throws {CliError} naming --init-from when the directory is not a checkpoint this engine can load
 */
async function initEngine(spec: EngineSpec, dir: string): Promise<Engine> {
  try {
    return await createEngineFrom(spec, dir);
  } catch (err) {
    if (err instanceof CheckpointInvalid) throw new CliError(`--init-from ${dir}: ${err.message}${initFromHint(dir)}`);
    throw err;
  }
}

/** What to give `--init-from` instead of a trainer checkpoint's step folder: its `engine/`, or an agent's policy. */
function initFromHint(dir: string): string {
  if (isDirectory(join(dir, "policies"))) {
    return `; it holds a policy per agent: give one agent's folder, ${join(dir, "policies", "AGENT")} (every policy starts from it)`;
  }
  return isDirectory(join(dir, "engine")) ? `; did you mean ${join(dir, "engine")}?` : "";
}

/** The stack `arclight train` runs on: what the flags name as running, the rest started here. */
function trainStackOptions(config: Readonly<TrainerConfig>, flags: TrainFlags, runDir: string): StackOptions {
  const key = resolveKey("train", flags, process.env);
  const perAgent = config.agents.policy === "per_agent";
  const spec = policySpec(engineSpecOf(config.engine, flags), config, flags);
  const vllm = vllmSamplerOf(config, flags, spec);
  // A torch worker of a policy per agent starts bare: each adapter loads --init-from itself (frozen-agents.ts).
  const fromInit = flags.initFrom !== undefined && !(perAgent && spec.kind === "torch");
  const engine = () => (fromInit ? initEngine(spec, flags.initFrom as string) : createEngine(spec));
  const startsGateway = flags.gatewayUrl === undefined;
  const frozen = perAgent
    ? perAgentStack(config.agents, flags.modelName, engine, () => flags.initFrom, startsGateway)
    : frozenAgentsStack(config.agents, engine, startsGateway);
  const gatewayArgs = [
    ...(frozen.gatewayArgs ?? []),
    ...temperatureArgs("val", flags.valTemperature, flags.gatewayUrl !== undefined),
    ...temperatureArgs("train", flags.trainTemperature, flags.gatewayUrl !== undefined),
  ];
  return {
    runDir,
    modelName: flags.modelName,
    engine,
    ...frozen,
    ...(gatewayArgs.length > 0 ? { gatewayArgs } : {}),
    ...(flags.gatewayUrl !== undefined ? { gateway: { url: flags.gatewayUrl, key } } : {}),
    ...(flags.engineUrl !== undefined ? { engineUrl: flags.engineUrl, engineKey: key } : {}),
    ...(vllm !== null ? { vllm } : {}),
    controller: flags.controller
      ? { poolSize: config.controller.pool_size, settings: localControllerSettings(config.controller) }
      : false,
    // Logs go to stderr: stdout carries the step table, which log lines would break up.
    logger: pino({ level: logLevel(flags.logLevel) }, pino.destination({ dest: 2, sync: true })),
  };
}

/**
 * The engine spec of the run's policies: with a policy per agent, a torch worker holds an adapter per agent.
 * @throws {CliError} when the engine or the flags cannot give each agent a policy
 */
function policySpec(spec: EngineSpec, config: Readonly<TrainerConfig>, flags: TrainFlags): EngineSpec {
  if (config.agents.policy !== "per_agent") return spec;
  if (flags.engineUrl !== undefined) {
    throw new CliError(
      "--engine-url: a running engine server serves one policy; with agents.policy per_agent arclight train " +
        "serves each agent's policy from the engine server it starts",
    );
  }
  if (spec.kind !== "torch") return spec;
  if (spec.torch.lora === null) {
    throw new CliError("agents.policy per_agent on the torch engine needs engine.lora (a LoRA adapter per agent)");
  }
  return { ...spec, adapters: config.agents.train };
}

/** What an interrupted run can do next: resume from its latest checkpoint, or nothing to resume when it saved none. */
function stoppedLine(runDir: string): string {
  if (existsSync(join(runDir, "checkpoints", "latest.json"))) {
    return "arclight train: stopped (resume with --resume from the latest checkpoint)";
  }
  return "arclight train: stopped; it saved no checkpoint (see checkpoint_interval), so --resume cannot continue it";
}

/**
 * Turns what a stopped or failed run threw into the CLI's answer (exit 130 after an interrupt, else one line).
 * A checkpoint that does not load is `--init-from`'s when given (the two flags exclude each other), else `--resume`'s.
 */
function trainFailure(err: unknown, interrupted: boolean, runDir: string, initFrom: string | undefined): void {
  if (interrupted) {
    console.error(stoppedLine(runDir));
    process.exitCode = 130;
    return;
  }
  if (err instanceof AllRolloutsFailed) {
    console.error("arclight train: stopped: the agent cannot run; check the config's controller section (see above)");
    process.exitCode = 1;
    return;
  }
  if (err instanceof RangeError || err instanceof TorchPackageMissing || err instanceof VllmSamplerError) {
    throw new CliError(err.message);
  }
  // A torch worker that is unreachable (engine.url) or died: its message names the worker's URL.
  if (err instanceof TorchWorkerError) throw new CliError(`engine: ${err.message}`);
  if (err instanceof CheckpointPoliciesMismatch) throw new CliError(`--resume: ${err.message}`);
  if (err instanceof CheckpointInvalid && initFrom !== undefined)
    throw new CliError(`--init-from ${initFrom}: ${err.message}${initFromHint(initFrom)}`);
  if (err instanceof CheckpointInvalid) {
    throw new CliError(`--resume: ${err.message} (resume with the --preset the run was trained with)`);
  }
  throw err;
}

/** What one training run on a started stack needs. */
interface TrainRun {
  config: Readonly<TrainerConfig>;
  flags: TrainFlags;
  runDir: string;
  trainData: DataItem[];
  valData: DataItem[] | null;
  logger: Logger;
  signal: AbortSignal;
  /** The engine as `describeEngineSpec` names it, e.g. `embedded tiny, 2 training threads`. */
  engineLabel: string;
  /** The config's LLM judge; undefined when `judge.enabled` is false. */
  judge: GroupJudge | undefined;
}

/** Runs the training loop on the stack, reporting to the console and the gateway's dashboard. */
async function trainOn(stack: Stack, run: TrainRun): Promise<TrainSummary> {
  const { config, flags, runDir } = run;
  const engines = stack.serving.endpoints.join(", ");
  console.log(`arclight train: run ${config.name}, gateway ${stack.gatewayUrl}, engine ${engines}`);
  console.log(`arclight train: engine ${run.engineLabel}`);
  if (stack.policies !== undefined) {
    const served = stack.policies.map((p) => `${p.agent} as ${p.modelName}`).join(", ");
    console.log(`arclight train: a policy per agent: ${served}; base weights as ${stack.baseModels.join(", ")}`);
  }
  console.log(
    `arclight train: dashboard ${dashboardUrl(stack.gatewayUrl, flags.gatewayUrl === undefined ? stack.key : "")}`,
  );
  // Before the dashboard run and the trackers open, so that a refused config leaves no tracker run behind.
  checkContextFits(config, stack.engine.contextLength);
  const poster = new RunPoster(stack.client, config.name, run.logger);
  poster.start({ ...config }, totalStepsOf(config, run.trainData.length), join(runDir, "metrics.jsonl"));
  const trackerRun = { dir: runDir, resume: flags.resume === true };
  const trackers = startTrackers("train", config.tracking, config.name, { ...config }, run.logger, trackerRun);
  let status: "finished" | "failed" = "failed";
  try {
    const summary = await runTraining({
      config,
      client: stack.client,
      engine: stack.engine,
      ...(stack.policies !== undefined ? { policies: stack.policies } : {}),
      baseModels: stack.baseModels,
      serving: stack.serving,
      trainData: run.trainData,
      valData: run.valData,
      runDir,
      resume: flags.resume === true,
      modelName: flags.modelName,
      logger: run.logger,
      reporter: combineReporters(consoleReporter(), poster, trackingReporter(trackers)),
      signal: run.signal,
      ...(run.judge !== undefined ? { judge: run.judge } : {}),
    });
    status = "finished";
    return summary;
  } catch (err) {
    // Read the agent's output now: a gateway this command started is gone once the stack closes.
    if (err instanceof AllRolloutsFailed) {
      const why = await describeFirstFailed(stack.client, err.rolloutIds).catch(() => null);
      console.error(`arclight train: ${err.message}${why === null ? "" : `; ${why}`}`);
    }
    throw err;
  } finally {
    await Promise.all([poster.flush(), trackers.finish(status)]);
  }
}

/** The engine line of the start-up output: the spec's description, with where `--init-from` takes the weights from. */
function engineLabelOf(spec: EngineSpec, initFrom: string | undefined): string {
  if (initFrom === undefined) return describeEngineSpec(spec);
  if (spec.kind === "embedded") return describeEngineSpec(specFrom(spec, initFrom));
  return `${describeEngineSpec(spec)} (weights from ${initFrom})`;
}

/** Runs the command; everything started here is stopped before returning. */
async function train(configPath: string, flags: TrainFlags): Promise<void> {
  const config = loadTrainerConfigFile(configPath, flags.set ?? [], { tracking: flags });
  checkRunName(`name (${configPath})`, config.name);
  if (flags.initFrom !== undefined && flags.resume === true) {
    throw new CliError("--init-from with --resume: --resume continues the run's own checkpoint; give one of them");
  }
  const runDir = resolve("runs", config.name);
  const stackOptions = trainStackOptions(config, flags, runDir);
  const judge = judgeOf(config.judge, process.env);
  prepareRunDir(runDir, config.name, flags.resume === true);
  const trainData = readDataFile("data.train_path", config.data.train_path);
  const valData = config.data.val_path === null ? null : readDataFile("data.val_path", config.data.val_path);
  checkRunNameRoom(`name (${configPath})`, config.name, longestTrainingRolloutIds(config, trainData, valData));
  const interrupt = listenForInterrupt("train", "stopping after the current operation (agents, engine, gateway)");
  try {
    const engineLabel = engineLabelOf(engineSpecOf(config.engine, flags), flags.initFrom);
    const { logger } = stackOptions;
    const run = { config, flags, runDir, trainData, valData, logger, signal: interrupt.signal, engineLabel, judge };
    const summary = await withStack(stackOptions, (stack) => trainOn(stack, run));
    console.log(
      `arclight train: ${summary.steps} steps, policy version ${summary.policyVersion}, metrics in ${runDir}`,
    );
    if (flags.gatewayUrl === undefined) {
      const db = join("runs", config.name, "gateway.db");
      console.log(
        `arclight train: browse it later: ARCLIGHT_KEY=K arclight gateway --store sqlite:${db} --runs-dir runs`,
      );
    }
  } catch (err) {
    trainFailure(err, interrupt.signal.aborted, runDir, flags.initFrom);
  } finally {
    interrupt.dispose();
  }
}

/**
 * Registers `arclight train`.
 * @param program - the root commander program
 */
export function registerTrain(program: Command): void {
  const command = program
    .command("train")
    .description("Train a policy with GRPO from agent rollouts (starts gateway, engine and controller as needed)")
    .argument("<config>", "trainer YAML config (see docs/configuration.md)")
    .option(
      "--resume",
      "continue from runs/NAME's latest checkpoint, and its W&B and MLflow runs when the tracking settings are given again",
    )
    .option("--init-from <dir>", "start from an engine checkpoint's weights, e.g. runs/NAME/checkpoint of arclight sft")
    .option("--gateway-url <url>", "use a running gateway instead of starting one")
    .option(
      "--key <key>",
      "API key of that gateway and of the --engine-url server (visible in ps: prefer ARCLIGHT_KEY, AGL_KEY or --key-file)",
    )
    .option("--key-file <path>", "file whose first line is the key; also ARCLIGHT_KEY_FILE")
    .option("--engine-url <url>", "a running engine server's /v1 URL to publish weights to (POST /v1/load_weights)")
    .option("--no-controller", "do not start a local controller (one already watches the gateway)")
    .option("--engine <kind>", "embedded or torch (overrides the config's engine.kind; see docs/torch-engine.md)")
    .option("--sampler <kind>", "engine or vllm: who answers the rollouts' model calls (overrides engine.sampler)")
    .option(
      "--vllm-endpoint <url>",
      "a vLLM server's /v1 URL for --sampler vllm; repeat for several (replaces engine.vllm_endpoints)",
      (url: string, previous: string[] | undefined) => [...(previous ?? []), url],
    )
    .option("--vllm-launch", "start vLLM for --sampler vllm (engine.vllm.launch; its defaults when unset)")
    .option("--vllm-replicas <n>", "vLLM processes to start (overrides engine.vllm.replicas)")
    .option("--preset <name>", "embedded engine model preset", "tiny")
    .option("--engine-seed <n>", "weight-init seed of the embedded engine", "0")
    .option("--model-name <name>", "model name the gateway proxy serves", "policy")
    .option("--val-temperature <t>", "sampling temperature of validation rollouts (gateway child; default 0.7)")
    .option(
      "--train-temperature <t>",
      "sampling temperature of training rollouts (gateway child; default 1; the trainer scores at 1)",
    )
    .option("--log-level <level>", "pino log level", "warn")
    .option(
      "--set <key=value>",
      "override a config key (dotted path, YAML value), e.g. --set total_steps=5 --set optimizer.learning_rate=1e-4; repeatable",
      collectSetFlag,
    );
  addTrackingOptions(command).action(train);
}
