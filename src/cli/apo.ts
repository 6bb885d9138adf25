/**
 * @module `arclight apo CONFIG.yaml`: automatic prompt optimisation. Starts a gateway (a child on runs/NAME/gateway.db,
 * or a running one) and a local controller that hands the prompt resource to the agents, registers the policy
 * endpoint, and runs the beam search (src/apo/search.ts) with the configured optimiser LLM. Writes
 * runs/NAME/history.jsonl and runs/NAME/best-prompt.txt, and publishes the best prompt as the resource's newest version.
 */
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { type Logger, pino } from "pino";
import type { ScoredPrompt } from "../apo/beam.js";
import { type ApoConfig, parseApoConfig } from "../apo/config.js";
import { History } from "../apo/history.js";
import { Optimiser } from "../apo/optimiser.js";
import { PromptRunFailed, PromptRunner } from "../apo/prompt-runs.js";
import { type ApoResult, type RoundReport, runApoSearch } from "../apo/search.js";
import type { GatewayClient } from "../gateway/client.js";
import { ResourceNotFound, ValidationFailed } from "../protocol/index.js";
import { type AgentStack, type AgentStackOptions, startAgentStack } from "../run/stack.js";
import type { TrackerSet } from "../tracking/tracker.js";
import { parseTrainerConfig } from "../trainer/config.js";
import type { DataItem } from "../trainer/data-order.js";
import { describeFirstFailed } from "../trainer/failure-report.js";
import { localControllerSettings } from "../trainer/rollout-groups.js";
import { resolveAgentPaths } from "./agent-paths.js";
import { CliError } from "./cli-error.js";
import { checkRunName, listenForInterrupt, logLevel, readDataFile } from "./common-flags.js";
import { type KeyFlags, readKeyFile, resolveKey } from "./key-source.js";
import { applySetFlags, collectSetFlag, configLabel, readConfigFile } from "./layered-config.js";
import { addTrackingOptions, applyTrackingFlags, startTrackers, type TrackingFlags } from "./tracking-flags.js";

/** Flags of `arclight apo`. */
interface ApoFlags extends KeyFlags, TrackingFlags {
  gatewayUrl?: string;
  policyEndpoint?: string;
  logLevel: string;
  /** `--set KEY=VALUE` overrides of the YAML, in order. */
  set?: string[];
}

/**
 * Reads the YAML, applies `--set`, then the other flags, validates; data paths resolve against the config file's
 * directory.
 */
function loadApoConfig(path: string, flags: ApoFlags): Readonly<ApoConfig> {
  const sets = flags.set ?? [];
  let raw = applyTrackingFlags(applySetFlags(readConfigFile(path, "apo", path), sets), flags);
  if (flags.gatewayUrl !== undefined) raw = { ...raw, gateway_url: flags.gatewayUrl };
  if (flags.policyEndpoint !== undefined) {
    raw = { ...raw, policy: { ...(raw.policy as object), endpoint: flags.policyEndpoint } };
  }
  try {
    const config = parseApoConfig(raw);
    const base = dirname(resolve(path));
    const at = (p: string | null) => (p === null ? null : resolve(base, p));
    const data = { ...config.data, train_path: at(config.data.train_path), val_path: at(config.data.val_path) };
    const keyFile = at(config.optimiser.api_key_file);
    const agent = resolveAgentPaths(config.agent, base);
    return Object.freeze({ ...config, data, agent, optimiser: { ...config.optimiser, api_key_file: keyFile } });
  } catch (err) {
    if (err instanceof ValidationFailed) {
      const label = configLabel(path, sets);
      const flag = flags.policyEndpoint !== undefined && /policy\.endpoint/.test(err.message);
      throw new CliError(`${flag ? `--policy-endpoint ${flags.policyEndpoint}` : label}: ${err.message}`);
    }
    throw err;
  }
}

/** The optimiser's key: `optimiser.api_key_file`, else the env var `optimiser.api_key_env` names. */
function optimiserKey(config: Readonly<ApoConfig>): string {
  const { api_key_file: file, api_key_env: envName } = config.optimiser;
  if (file !== null) return readKeyFile(file, "optimiser.api_key_file");
  const key = process.env[envName];
  if (key === undefined || key === "") {
    throw new CliError(
      `optimiser key: ${envName} (optimiser.api_key_env) is not set and optimiser.api_key_file is null; ` +
        "set one (any non-empty value for a server without keys)",
    );
  }
  return key;
}

/** The stack: the controller hands the prompt resource to every agent (env var and/or file). */
function stackOptions(
  config: Readonly<ApoConfig>,
  flags: ApoFlags,
  runDir: string,
  logger: Logger,
  signal: AbortSignal,
) {
  const resource = config.prompt.resource;
  const options: AgentStackOptions = {
    runDir,
    modelName: config.policy.model,
    controller: {
      poolSize: config.agent.pool_size,
      settings: {
        ...localControllerSettings(config.agent),
        resources_env: config.prompt.env === null ? {} : { [config.prompt.env]: resource },
        resources_file_env: config.prompt.file_env === null ? {} : { [config.prompt.file_env]: resource },
        resources_dir: join(runDir, "resources"),
      },
    },
    logger,
    closeOnAbort: signal,
  };
  if (config.gateway_url !== null)
    options.gateway = { url: config.gateway_url, key: resolveKey("apo", flags, process.env) };
  return options;
}

/** The starting prompt: `prompt.initial` stored as a new version, or the resource's latest version. */
async function initialPrompt(client: GatewayClient, config: Readonly<ApoConfig>, runner: PromptRunner) {
  if (config.prompt.initial !== null) {
    return { prompt: config.prompt.initial, version: await runner.store(config.prompt.initial) };
  }
  try {
    const latest = await client.getResource(config.prompt.resource);
    if (typeof latest.value !== "string") {
      throw new CliError(`resource ${config.prompt.resource} v${latest.version} is not a string; set prompt.initial`);
    }
    return { prompt: latest.value, version: latest.version };
  } catch (err) {
    if (!(err instanceof ResourceNotFound)) throw err;
    throw new CliError(`prompt.initial is null and the gateway has no resource ${config.prompt.resource}; set it`);
  }
}

const beamText = (beam: readonly ScoredPrompt[]) => beam.map((p) => `${p.id} ${p.score.toFixed(3)}`).join(", ");

/** The progress line of a finished round. */
function roundLine(report: RoundReport, rounds: number): string {
  const t = report.timings;
  const best = report.beam[0] as ScoredPrompt;
  const what = report.bad
    ? "BAD ROUND: the optimiser gave no usable prompt (see history.jsonl), nothing scored"
    : `${report.candidates} candidates scored`;
  return (
    `arclight apo: round ${report.round}/${rounds}: ${what}; best ${best.id} ${best.score.toFixed(3)} ` +
    `(+${report.gain.toFixed(3)}), beam [${beamText(report.beam)}], ${t.round_s.toFixed(1)} s ` +
    `(minibatch ${t.minibatch_s.toFixed(1)} s, optimiser ${t.optimiser_s.toFixed(1)} s, scoring ${t.scoring_s.toFixed(1)} s)`
  );
}

/** One round for the experiment trackers: its scores and timings as metrics, its beam as a table. */
function trackRound(trackers: TrackerSet, report: RoundReport): void {
  const best = report.beam[0];
  trackers.logMetrics(report.round, {
    "apo/best_score": best?.score ?? null,
    "apo/gain": report.gain,
    "apo/candidates": report.candidates,
    "apo/bad_round": report.bad ? 1 : 0,
    "time/round_s": report.timings.round_s,
    "time/optimiser_s": report.timings.optimiser_s,
    "time/scoring_s": report.timings.scoring_s,
  });
  trackers.logTable("apo/beam", report.round, {
    columns: ["id", "score", "version", "round", "prompt"],
    rows: report.beam.map((p) => [p.id, p.score, p.version, p.round, p.prompt]),
  });
}

/** The train and validation inputs (validation cut to `data.val_size`). */
function readInputs(config: Readonly<ApoConfig>): { train: DataItem[]; val: DataItem[] } {
  const train = readDataFile("data.train_path", config.data.train_path as string);
  const val = readDataFile("data.val_path", config.data.val_path as string).slice(0, config.data.val_size ?? undefined);
  if (train.length === 0) throw new CliError(`data.train_path ${config.data.train_path}: no inputs`);
  if (val.length === 0) throw new CliError(`data.val_path ${config.data.val_path}: no inputs`);
  return { train, val };
}

/** Runs the search on a started stack. */
async function search(
  stack: AgentStack,
  config: Readonly<ApoConfig>,
  inputs: { train: DataItem[]; val: DataItem[] },
  runDir: string,
  signal: AbortSignal,
  trackers: TrackerSet,
) {
  const { train, val } = inputs;
  await stack.client.upsertModels([{ model: config.policy.model, endpoint: config.policy.endpoint as string }]);
  const agentConfig = parseTrainerConfig({
    name: config.name,
    controller: config.agent,
    rollout_timeout_seconds: config.rollout_timeout_seconds,
    reward_fillna_value: config.reward_fillna_value,
  });
  const idPrefix = `${config.name}-${Date.now().toString(36)}`;
  const runner = new PromptRunner({
    client: stack.client,
    resource: config.prompt.resource,
    config: agentConfig,
    idPrefix,
    signal,
  });
  const initial = await initialPrompt(stack.client, config, runner);
  console.log(
    `arclight apo: scoring the starting prompt (${config.prompt.resource} v${initial.version}) on ${val.length} ` +
      `validation inputs; rollout ids ${idPrefix}-…`,
  );
  const optimiser = new Optimiser({
    baseUrl: config.optimiser.base_url,
    model: config.optimiser.model,
    apiKey: optimiserKey(config),
    timeoutMs: config.optimiser.timeout_seconds * 1000,
    temperature: config.optimiser.temperature,
    maxTokens: config.optimiser.max_tokens,
  });
  return runApoSearch({
    search: config.search,
    runner,
    optimiser,
    train,
    val,
    initial,
    history: new History(join(runDir, "history.jsonl")),
    seed: config.seed,
    onRound: (report) => {
      console.log(roundLine(report, config.search.rounds));
      trackRound(trackers, report);
    },
    onBadOutput: (round, parentId, stage, problems) =>
      console.log(
        `arclight apo: round ${round}: optimiser ${stage} for ${parentId} rejected twice: ${problems.join("; ")}`,
      ),
  });
}

/**
 * Prints the outcome and writes best-prompt.txt. A search whose every round was bad (the optimiser never gave a
 * usable prompt) ends with exit code 1: it only re-scored the starting prompt.
 */
function report(result: ApoResult, config: Readonly<ApoConfig>, runDir: string): void {
  const path = join(runDir, "best-prompt.txt");
  writeFileSync(path, `${result.best.prompt}\n`);
  const why = result.stopReason === "patience" ? `no gain for ${config.search.patience} round(s)` : "all rounds run";
  const bad = result.badRounds === 0 ? "" : `, ${result.badRounds} bad`;
  console.log(
    `arclight apo: ${result.rounds} round${result.rounds === 1 ? "" : "s"} (${why}${bad}); val score ` +
      `${result.initialScore.toFixed(3)} -> ${result.best.score.toFixed(3)} (${result.best.id}, round ${result.best.round})`,
  );
  const published =
    result.publishedVersion === null
      ? `the starting prompt stayed best: ${config.prompt.resource} left unchanged`
      : `best prompt published as ${config.prompt.resource} v${result.publishedVersion}`;
  console.log(`arclight apo: ${published}; ${path}; history ${join(runDir, "history.jsonl")}`);
  if (result.rounds > 0 && result.badRounds === result.rounds) {
    console.error(
      `arclight apo: every round was bad: the optimiser gave no usable prompt (reasons above and in history.jsonl); ` +
        `check optimiser.base_url (${config.optimiser.base_url}), optimiser.model and its key`,
    );
    process.exitCode = 1;
  }
}

/** Reports a search stopped because the agent never completed a rollout, naming the policy endpoint. */
async function reportRunFailed(err: PromptRunFailed, client: GatewayClient, config: Readonly<ApoConfig>) {
  const why = await describeFirstFailed(client, err.rolloutIds).catch(() => null);
  console.error(`arclight apo: ${err.message}${why === null ? "" : `; ${why}`}`);
  console.error(
    `arclight apo: stopped before asking the optimiser: the agent cannot run or cannot reach the policy; check ` +
      `policy.endpoint (${config.policy.endpoint}; --policy-endpoint) and the agent section`,
  );
  process.exitCode = 1;
}

/** Runs the command; everything started here is stopped before returning. */
async function apo(configPath: string, flags: ApoFlags): Promise<void> {
  const config = loadApoConfig(configPath, flags);
  checkRunName(`name (${configPath})`, config.name);
  optimiserKey(config);
  const inputs = readInputs(config);
  const runDir = resolve("runs", config.name);
  if (existsSync(join(runDir, "history.jsonl"))) {
    throw new CliError(
      `run ${config.name}: ${runDir} holds an earlier search; set another name (name: in the YAML, or --set name=…) or delete the folder`,
    );
  }
  const logger = pino({ level: logLevel(flags.logLevel) });
  const interrupt = listenForInterrupt("apo", "stopping the agents and the gateway");
  const stack = await startAgentStack(stackOptions(config, flags, runDir, logger, interrupt.signal));
  const trackers = startTrackers("apo", config.tracking, config.name, { ...config }, logger);
  let status: "finished" | "failed" = "failed";
  try {
    const result = await search(stack, config, inputs, runDir, interrupt.signal, trackers);
    report(result, config, runDir);
    trackers.logSummary("best_prompt_path", join(runDir, "best-prompt.txt"));
    status = "finished";
  } catch (err) {
    if (err instanceof PromptRunFailed && !interrupt.signal.aborted) {
      await reportRunFailed(err, stack.client, config);
      return;
    }
    if (!interrupt.signal.aborted) throw err;
    console.error("arclight apo: stopped (history.jsonl holds what was scored)");
    process.exitCode = 130;
  } finally {
    interrupt.dispose();
    await trackers.finish(status);
    await stack.close();
  }
}

/**
 * Registers `arclight apo`.
 * @param program - the root commander program
 */
export function registerApo(program: Command): void {
  const command = program
    .command("apo")
    .description("Prompt optimisation: beam search over a prompt resource with an optimiser LLM's critiques and edits")
    .argument("<config>", "APO YAML config (see docs/sft-apo.md)")
    .option("--gateway-url <url>", "use this running gateway (overrides gateway_url)")
    .option("--key-file <path>", "file whose first line is that gateway's key (also ARCLIGHT_KEY)")
    .option("--policy-endpoint <url>", "OpenAI-compatible base URL of the policy (overrides policy.endpoint)")
    .option("--log-level <level>", "pino log level", "warn")
    .option(
      "--set <key=value>",
      "override a config key (dotted path, YAML value), e.g. --set search.rounds=2 --set data.val_size=8; repeatable",
      collectSetFlag,
    );
  addTrackingOptions(command).action(apo);
}
