/**
 * @module `arclight eval CONFIG`: runs a trainer config's agent over its validation (or train) tasks, `--samples`
 * rollouts a task, against the config's engine, a checkpoint of it (`--checkpoint`) or any OpenAI-compatible endpoint
 * (`--endpoint URL --model NAME`), through a fresh gateway (SQLite in a temporary directory) and local controller, and
 * reports pass@k, the mean reward and the completion share as a table (`--out` writes JSON or CSV). Nothing trains:
 * the engine only samples. The older form `arclight eval CHECKPOINT --data FILE [--config YAML]` evaluates an
 * embedded-engine checkpoint, with the bundled calculator agent when no `--config` is given.
 */

import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { type Logger, pino } from "pino";
import { readRolloutPath } from "../controller/agent-env.js";
import { startPhase } from "../demo/progress.js";
import { calculatorAgentClass } from "../demo/settings.js";
import { CheckpointInvalid } from "../engine/checkpoint-error.js";
import type { Engine } from "../engine/engine.js";
import { TorchPackageMissing } from "../engine/remote/worker-process.js";
import { runEvalRollouts, type TaskOutcome } from "../eval/eval-rollouts.js";
import { formatEvalCsv, formatEvalTable, summariseEval } from "../eval/summary.js";
import type { GatewayClient } from "../gateway/client.js";
import type { GroupJudge } from "../judge/apply.js";
import type { Rollout } from "../protocol/index.js";
import { createEngine } from "../run/engine-factory.js";
import { createEngineFrom } from "../run/init-from.js";
import { type StackControllerOptions, type StackOptions, startAgentStack, withStack } from "../run/stack.js";
import { CheckpointPoliciesMismatch, checkCheckpointPolicies } from "../trainer/checkpoint.js";
import { parseTrainerConfig, type TrainerConfig } from "../trainer/config.js";
import type { DataItem } from "../trainer/data-order.js";
import { describeFailedRollout } from "../trainer/failure-report.js";
import { proxyRegistrationOf, registerEndpoints } from "../trainer/gateway-io.js";
import { localControllerSettings } from "../trainer/rollout-groups.js";
import { CliError } from "./cli-error.js";
import { listenForInterrupt, logLevel, readDataFile } from "./common-flags.js";
import { engineSpecOf } from "./engine-spec.js";
import {
  type EvalFlags,
  type EvalSampling,
  isDirectory,
  type PolicySource,
  policySourceOf,
  probeEndpoint,
  samplingOf,
} from "./eval-flags.js";
import { frozenAgentsStack, perAgentStack } from "./frozen-agents.js";
import { judgeOf } from "./judge-settings.js";
import { applySetFlags, collectSetFlag, readConfigFile } from "./layered-config.js";
import { loadTrainerConfigFile } from "./trainer-config-file.js";

/** The calculator's starter trainer config, `examples/calculator/train.yaml` of this package: eval's default agent. */
const CALCULATOR_CONFIG = fileURLToPath(new URL("../../examples/calculator/train.yaml", import.meta.url));

/** Where the calculator's agent command (`examples/calculator/agent.ts`, relative) runs: this package's root. */
const PACKAGE_ROOT = dirname(dirname(dirname(CALCULATOR_CONFIG)));

/** The model name the gateway serves the policy as (the agents' `model`) for an engine of this process. */
const POLICY_MODEL = "policy";

/** Everything the command runs with, checked. */
interface EvalPlan {
  config: Readonly<TrainerConfig>;
  /** The bundled calculator runs (no config given): from the package root, in reused processes. */
  bundled: boolean;
  items: DataItem[];
  dataLabel: string;
  source: PolicySource;
  sampling: EvalSampling;
  threshold: number;
  /** The config's LLM judge (`judge.enabled`), applied to each task's rollouts; undefined: none. */
  judge: GroupJudge | undefined;
  /** `--preset` and `--engine-seed`: the config's embedded engine, as `arclight train` builds it. */
  engineFlags: Pick<EvalFlags, "preset" | "engineSeed">;
}

/** The bundled calculator's config: its agent export in reused processes instead of one Node process per input. */
function calculatorConfig(sets: readonly string[]): Readonly<TrainerConfig> {
  const raw = applySetFlags(readConfigFile(CALCULATOR_CONFIG, "trainer"), sets) as {
    controller?: Record<string, unknown>;
  };
  const { command: _perProcess, ...controller } = raw.controller ?? {};
  const reused = { ...controller, agent_class: calculatorAgentClass().agentClass, reuse_processes: true };
  return Object.freeze(parseTrainerConfig({ ...raw, controller: reused }));
}

/**
 * The tasks: `--data`, else the config's `data.val_path` (`--split val`) or `data.train_path` (`--split train`).
 * @throws {CliError} naming --split or --data
 */
function tasksOf(flags: EvalFlags, config: Readonly<TrainerConfig>, bundled: boolean) {
  if (flags.split !== "val" && flags.split !== "train") {
    throw new CliError(`--split ${flags.split}: expected val or train`);
  }
  let path = flags.data;
  if (path === undefined) {
    if (bundled)
      throw new CliError("--data: required with a checkpoint argument and no --config (a JSONL file of inputs)");
    path = flags.split === "val" ? (config.data.val_path ?? undefined) : config.data.train_path;
    if (path === undefined)
      throw new CliError("--split val: the config has no data.val_path; give --data FILE or --split train");
  }
  const label = flags.data === undefined ? `--split ${flags.split} (${path})` : "--data";
  const items = readDataFile(label, path);
  if (items.length === 0)
    throw new CliError(`${label}${flags.data === undefined ? "" : ` ${path}`}: no inputs (the file has no JSON lines)`);
  return { items, dataLabel: path, label };
}

/**
 * Checks that every input has the fields the agent's `env_map` reads from `input.…`, so a wrong data file is named
 * before any agent starts (the controller would otherwise fail each rollout with a warning).
 * @throws {CliError} naming the file, the input's position and the env var on the first missing field
 */
function checkEnvMapPaths(items: readonly DataItem[], config: Readonly<TrainerConfig>, label: string): void {
  const inputPaths = Object.entries(config.controller.env_map).filter(([, path]) => path.startsWith("input."));
  for (const item of items) {
    for (const [envName, path] of inputPaths) {
      try {
        readRolloutPath({ input: item.input } as unknown as Rollout, path, envName);
      } catch {
        throw new CliError(
          `${label}: input ${item.index + 1} has no ${path.slice("input.".length)} ` +
            `(the agent's env_map ${envName}: ${path})`,
        );
      }
    }
  }
}

/** Checks every flag and reads the config and tasks, before anything starts. */
function planOf(target: string, flags: EvalFlags): EvalPlan {
  const argIsCheckpoint = isDirectory(target);
  if (!argIsCheckpoint && !existsSync(target)) throw new CliError(`CONFIG ${target}: no such file`);
  if (!argIsCheckpoint && flags.config !== undefined) {
    throw new CliError(
      `--config: the argument ${target} is already the config (--config goes with a checkpoint argument)`,
    );
  }
  const sampling = samplingOf(flags);
  const source = policySourceOf(flags, argIsCheckpoint, target, process.env);
  const bundled = argIsCheckpoint && flags.config === undefined;
  const config = !argIsCheckpoint
    ? loadTrainerConfigFile(target, flags.set, { label: "CONFIG" })
    : flags.config !== undefined
      ? loadTrainerConfigFile(flags.config, flags.set, { label: "--config" })
      : calculatorConfig(flags.set);
  if (source.kind === "checkpoint" && config.agents.policy === "per_agent")
    checkPerAgentCheckpoint(source.dir, config.agents.train);
  if (source.kind === "checkpoint" && config.agents.frozen.length === 0 && config.agents.policy !== "per_agent") {
    const engineFlag =
      flags.preset !== undefined ? "--preset" : flags.engineSeed !== undefined ? "--engine-seed" : null;
    if (engineFlag !== null) {
      throw new CliError(
        `${engineFlag}: with --checkpoint it builds the starting weights of agents.frozen, and the config has none`,
      );
    }
  }
  const { items, dataLabel, label } = tasksOf(flags, config, bundled);
  const limited = items.slice(0, sampling.limit);
  checkEnvMapPaths(limited, config, label);
  return {
    config,
    bundled,
    items: limited,
    dataLabel,
    source,
    sampling,
    threshold: sampling.threshold ?? config.pass_threshold,
    judge: judgeOf(config.judge, process.env),
    engineFlags: { preset: flags.preset, engineSeed: flags.engineSeed },
  };
}

/** The config's engine as `arclight train` builds it (its starting weights), with `--preset` and `--engine-seed`. */
function configEngineSpec(plan: EvalPlan) {
  return engineSpecOf(plan.config.engine, {
    preset: plan.engineFlags.preset ?? "tiny",
    engineSeed: plan.engineFlags.engineSeed ?? "0",
  });
}

/**
 * A run with a policy per agent is evaluated from its trainer checkpoint, which holds `policies/AGENT` for each.
 * @throws {CliError} naming --checkpoint, and the folder to give when it is the shared policy's `engine/` layout, or
 *   what it holds when its agents are not those of `agents.train`
 */
function checkPerAgentCheckpoint(dir: string, agents: readonly string[]): void {
  if (isDirectory(join(dir, "policies"))) {
    try {
      checkCheckpointPolicies(dir, agents);
    } catch (err) {
      if (err instanceof CheckpointPoliciesMismatch) throw new CliError(`--checkpoint ${dir}: ${err.message}`);
      throw err;
    }
    return;
  }
  // `engine/` or `policies/` sits one level below the step folder, an agent's own folder two.
  const parent = dirname(resolve(dir));
  const step = [parent, dirname(parent)].find((up) => isDirectory(join(up, "policies")));
  const hint = step !== undefined ? `; did you mean ${step}?` : "";
  throw new CliError(
    `--checkpoint ${dir}: the config trains a policy per agent (agents.policy per_agent): give the trainer ` +
      `checkpoint that holds policies/AGENT, e.g. runs/NAME/checkpoints/step-000010${hint}`,
  );
}

/**
 * A policy per agent (`agents.policy: per_agent`) of the config's engine: each trained agent served its policy from
 * the checkpoint's `policies/AGENT` (the starting weights without `--checkpoint`), the others the base weights,
 * routed by the gateway child as in training.
 */
function perAgentOf(plan: EvalPlan): Pick<StackOptions, "engine" | "perAgent" | "gatewayArgs"> {
  const spec = configEngineSpec(plan);
  const { source } = plan;
  const weightsOf = (agent: string) => (source.kind === "checkpoint" ? join(source.dir, "policies", agent) : undefined);
  const copy = async (agent: string) => {
    const weights = weightsOf(agent);
    try {
      return weights === undefined ? await createEngine(spec) : await createEngineFrom(spec, weights);
    } catch (err) {
      if (err instanceof CheckpointInvalid) throw new CliError(`--checkpoint ${weights}: ${err.message}`);
      throw err;
    }
  };
  const torchSpec = spec.kind === "torch" ? { ...spec, adapters: plan.config.agents.train } : spec;
  const stack = perAgentStack(plan.config.agents, POLICY_MODEL, copy, weightsOf, true);
  return { ...stack, engine: () => createEngine(torchSpec) };
}

/**
 * The frozen agents (`agents.frozen`) of a `--checkpoint` run: served the config's starting weights, as in training,
 * so the team evaluated is the team trained (the checkpoint holds the trained agents' weights). The config's own
 * engine already is the starting weights, and an endpoint serves every agent itself: no second engine for those.
 */
function frozenOf(plan: EvalPlan): Pick<StackOptions, "frozen" | "gatewayArgs"> {
  if (plan.source.kind !== "checkpoint") return {};
  const spec = configEngineSpec(plan);
  return frozenAgentsStack(plan.config.agents, () => createEngine(spec), true);
}

/**
 * The engine of an engine source: the config's (fresh weights), or loaded from a checkpoint.
 * @throws {CliError} naming --checkpoint or CHECKPOINT for a directory that is not a checkpoint of that engine
 */
async function engineOf(plan: EvalPlan): Promise<Engine> {
  const { source } = plan;
  if (source.kind === "embedded-checkpoint") {
    try {
      return await createEngine({ kind: "embedded", checkpoint: resolve(source.dir) });
    } catch (err) {
      const inner = join(source.dir, "engine");
      const hint = existsSync(join(inner, "config.json")) ? `; did you mean ${inner}?` : "";
      throw new CliError(
        `CHECKPOINT ${source.dir}: not an embedded-engine checkpoint (${(err as Error).message})${hint}`,
      );
    }
  }
  const spec = configEngineSpec(plan);
  try {
    return source.kind === "checkpoint" ? await createEngineFrom(spec, source.dir) : await createEngine(spec);
  } catch (err) {
    if (err instanceof CheckpointInvalid && source.kind === "checkpoint") {
      throw new CliError(`--checkpoint ${source.dir}: ${err.message}${trainerCheckpointHint(source.dir)}`);
    }
    if (err instanceof TorchPackageMissing) throw new CliError(err.message);
    throw err;
  }
}

/** What to give instead of a trainer checkpoint's step folder when the config trains one shared policy. */
function trainerCheckpointHint(dir: string): string {
  if (isDirectory(join(dir, "policies"))) {
    return "; it holds a policy per agent (policies/AGENT): evaluate it with agents.policy per_agent (--set agents.policy=per_agent)";
  }
  return isDirectory(join(dir, "engine")) ? `; did you mean ${join(dir, "engine")}?` : "";
}

/** The local controller: the config's agent, at the flag's or the config's pool size. */
function controllerOf(plan: EvalPlan): StackControllerOptions {
  const settings = {
    ...localControllerSettings(plan.config.controller),
    ...(plan.bundled ? { cwd: PACKAGE_ROOT } : {}),
  };
  return {
    poolSize: plan.sampling.poolSize ?? plan.config.controller.pool_size,
    settings,
    ...(plan.bundled ? { baseEnv: { ...process.env, ...calculatorAgentClass().env } } : {}),
  };
}

/** Runs the rollouts on a started gateway, with a progress line. */
async function rollOut(client: GatewayClient, plan: EvalPlan, policyVersion: number, signal: AbortSignal) {
  const total = plan.items.length * plan.sampling.samples;
  const phase = startPhase("eval", total, process.stderr);
  const tasks = await runEvalRollouts(client, plan.items, {
    prefix: "eval",
    samples: plan.sampling.samples,
    config: plan.config,
    policyVersion,
    onProgress: (done) => phase.update(done),
    signal,
    ...(plan.judge !== undefined ? { judge: plan.judge } : {}),
  });
  phase.finish(`${total} rollouts ended`);
  return tasks;
}

/** Runs every rollout on the stack the source needs; returns the outcomes and the first failed rollout's story. */
async function runPlan(plan: EvalPlan, workDir: string, logger: Logger, signal: AbortSignal) {
  const gatewayArgs = ["--val-temperature", String(plan.sampling.temperature)];
  const common = { runDir: workDir, gatewayArgs, logger, closeOnAbort: signal, controller: controllerOf(plan) };
  const finish = async (client: GatewayClient, tasks: TaskOutcome[]) => {
    const failed = tasks.flatMap((task) => task.rollouts).find((rollout) => !rollout.completed);
    return { tasks, firstFailure: failed === undefined ? null : await describeFailedRollout(client, failed.rolloutId) };
  };
  const { source } = plan;
  if (source.kind === "endpoint") {
    const stack = await startAgentStack({ ...common, modelName: source.model, upstreamKey: source.apiKey });
    try {
      await stack.client.upsertModels([{ model: source.model, endpoint: source.url }]);
      return await finish(stack.client, await rollOut(stack.client, plan, 0, signal));
    } finally {
      await stack.close();
    }
  }
  const frozen = plan.config.agents.policy === "per_agent" ? perAgentOf(plan) : frozenOf(plan);
  const engineStack = {
    ...common,
    engine: () => engineOf(plan),
    ...frozen,
    gatewayArgs: [...(frozen.gatewayArgs ?? []), ...gatewayArgs],
    modelName: POLICY_MODEL,
  };
  return withStack(engineStack, async (stack) => {
    const endpoints = stack.serving.endpoints;
    const proxy = proxyRegistrationOf(plan.config);
    // Per agent: each policy under its own name, the base weights under the run's and the frozen model's names.
    const served = stack.policies ?? [{ modelName: POLICY_MODEL, engine: stack.engine }];
    for (const { modelName, engine } of served) {
      await registerEndpoints(stack.client, modelName, endpoints, engine.policyVersion, proxy);
    }
    for (const name of stack.baseModels) await registerEndpoints(stack.client, name, endpoints, 0, proxy);
    return finish(stack.client, await rollOut(stack.client, plan, stack.engine.policyVersion, signal));
  });
}

/** What the policy was: for the report's header line. */
function sourceLabel(source: PolicySource): string {
  if (source.kind === "endpoint") return `endpoint ${source.url} model ${source.model}`;
  if (source.kind === "config-engine") return "the config's engine (its starting weights)";
  return `checkpoint ${source.dir}`;
}

/** Prints the summary line and table, writes `--out`, and names the first failure; exit 1 when every rollout failed. */
function report(plan: EvalPlan, tasks: readonly TaskOutcome[], firstFailure: string | null): void {
  const summary = summariseEval(tasks, plan.sampling.ks, plan.threshold);
  const failed = summary.rollouts - Math.round(summary.completedShare * summary.rollouts);
  const solved = summary.passAtK.find((entry) => entry.k === 1)?.value ?? 0;
  console.log(
    `arclight eval: ${summary.tasks} inputs from ${plan.dataLabel}: reward ${summary.meanReward.toFixed(3)}, ` +
      `solved (reward >= ${plan.threshold}) ${(solved * 100).toFixed(1)}%, failed rollouts ${failed}`,
  );
  console.log(`policy: ${sourceLabel(plan.source)}; temperature ${plan.sampling.temperature}`);
  console.log(formatEvalTable(summary));
  if (plan.judge !== undefined) {
    const judged = tasks.reduce((n, task) => n + (task.judge?.judged ?? 0), 0);
    const errors = tasks.reduce((n, task) => n + (task.judge?.errors ?? 0), 0);
    console.log(
      `judge: ${plan.judge.config.mode} ${plan.judge.config.model}: ${judged} rollouts judged, ${errors} without ` +
        "a verdict (their judge events say why; they keep the agent's reward)",
    );
  }
  if (plan.sampling.out !== null) {
    const { path, format } = plan.sampling.out;
    writeFileSync(path, format === "json" ? `${JSON.stringify(summary, null, 2)}\n` : formatEvalCsv(summary));
    console.log(`arclight eval: wrote ${path}`);
  }
  if (firstFailure !== null) console.error(`arclight eval: ${firstFailure}`);
  if (failed === summary.rollouts) {
    console.error("arclight eval: every rollout failed: check the config's controller section (see above)");
    process.exitCode = 1;
  }
}

/** Runs the command. */
async function evaluate(target: string, flags: EvalFlags): Promise<void> {
  const plan = planOf(target, flags);
  if (plan.source.kind === "endpoint") await probeEndpoint(plan.source.url);
  const logger = pino({ level: logLevel(flags.logLevel) }, pino.destination({ dest: 2, sync: true }));
  if (plan.bundled) {
    console.error(
      "arclight eval: no --config: running the bundled calculator agent (examples/calculator/train.yaml); " +
        "give --config YOUR_TRAIN.yaml to run your own agent",
    );
  }
  const workDir = mkdtempSync(join(tmpdir(), "arclight-eval-"));
  const interrupt = listenForInterrupt("eval", "stopping the agents, engine and gateway");
  try {
    const { tasks, firstFailure } = await runPlan(plan, workDir, logger, interrupt.signal);
    report(plan, tasks, firstFailure);
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
    .description("Evaluate a policy on a config's agent and tasks: pass@k, mean reward, completion share (no training)")
    .argument(
      "<config>",
      "trainer YAML (its agent, tasks and engine), e.g. recipes/calc_x/train.cpu.yaml; or an embedded checkpoint directory",
    )
    .option("--split <split>", "tasks from the config's data.val_path (val) or data.train_path (train)", "val")
    .option("--data <file>", "JSONL file of tasks (instead of --split)")
    .option("--limit <n>", "only the first N tasks")
    .option("--samples <n>", "rollouts per task (n of pass@k)", "1")
    .option("--k <list>", "pass@k values to report, comma-separated, each <= --samples (default: 1 and --samples)")
    .option("--threshold <reward>", "reward at or above which a rollout passes (default: the config's pass_threshold)")
    .option("--temperature <t>", "sampling temperature (default: 0 for one sample, 0.8 for several)")
    .option(
      "--checkpoint <dir>",
      "load the config's engine from this checkpoint (an embedded or torch checkpoint folder)",
    )
    .option("--endpoint <url>", "any OpenAI-compatible base URL serving the policy, e.g. http://127.0.0.1:8000/v1")
    .option("--model <name>", "with --endpoint: the model name it serves")
    .option("--api-key-env <var>", "with --endpoint: environment variable holding its API key")
    .option("--out <file>", "also write the summary as .json (with per-task rows) or .csv")
    .option("--config <file>", "with a checkpoint argument: trainer YAML whose controller section runs the agent")
    .option(
      "--preset <name>",
      "the config's embedded engine (and a --checkpoint's frozen agents' starting weights): model preset, as arclight train --preset (default tiny)",
    )
    .option("--engine-seed <n>", "the config's engine: weight-init seed, as arclight train --engine-seed (default 0)")
    .option("--pool-size <n>", "agent processes at once (default: the config's controller.pool_size)")
    .option("--log-level <level>", "pino log level of the components", "warn")
    .option(
      "--set <key=value>",
      "override a config key (dotted path, YAML value), e.g. --set controller.python=.venv/bin/python; repeatable",
      collectSetFlag,
      [],
    )
    .action(evaluate);
}
