/**
 * @module `arclight sft CONFIG.yaml`: supervised fine-tuning on recorded rollouts. It reads them from a running gateway
 * or an earlier run's gateway.db, selects (run, tag, data ids, reward threshold, best-of-N), trains the engine on the
 * policy's response tokens, and saves runs/NAME/checkpoint (for `arclight train --init-from`). With
 * `validation.data_path` it also starts a stack (gateway, engine server, controller) and scores the policy before and
 * after with real rollouts.
 */
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { type Logger, pino } from "pino";
import { startPhase } from "../demo/progress.js";
import { CheckpointInvalid } from "../engine/checkpoint-error.js";
import type { Engine } from "../engine/engine.js";
import { ValidationFailed } from "../protocol/index.js";
import { createEngine } from "../run/engine-factory.js";
import { createEngineFrom } from "../run/init-from.js";
import { type Stack, withStack } from "../run/stack.js";
import { parseTrainerConfig } from "../trainer/config.js";
import { readJsonl } from "../trainer/data-order.js";
import { localControllerSettings } from "../trainer/rollout-groups.js";
import { rolloutOnceId, runRolloutsOnce, summariseRewards } from "../trainer/rollouts-once.js";
import { parseSftConfig, type SftConfig } from "../trainer/sft-config.js";
import { runSft, type SftRunOptions, type SftSummary, sftCheckpointDir } from "../trainer/sft-run.js";
import { resolveAgentPaths } from "./agent-paths.js";
import { CliError } from "./cli-error.js";
import { checkRunName, checkRunNameRoom, listenForInterrupt, logLevel, readDataFile } from "./common-flags.js";
import { type EngineFlags, engineSpecOf } from "./engine-spec.js";
import { applySetFlags, collectSetFlag, configLabel, readConfigFile } from "./layered-config.js";
import { openSourceGateway } from "./source-gateway.js";
import { addTrackingOptions, applyTrackingFlags, startTrackers, type TrackingFlags } from "./tracking-flags.js";

/** Flags of `arclight sft`. */
interface SftFlags extends EngineFlags, TrackingFlags {
  gatewayUrl?: string;
  db?: string;
  key?: string;
  initFrom?: string;
  logLevel: string;
  /** `--set KEY=VALUE` overrides of the YAML, in order. */
  set?: string[];
}

/**
 * Reads the YAML, applies `--set`, then `--gateway-url` / `--db`, validates; paths resolve against the config file's
 * directory.
 */
function loadSftConfig(path: string, flags: SftFlags): Readonly<SftConfig> {
  const sets = flags.set ?? [];
  let raw = applyTrackingFlags(applySetFlags(readConfigFile(path, "sft", path), sets), flags);
  if (flags.gatewayUrl !== undefined) raw = { ...raw, source: { gateway_url: flags.gatewayUrl } };
  if (flags.db !== undefined) raw = { ...raw, source: { db_path: resolve(flags.db) } };
  try {
    const config = parseSftConfig(raw);
    const base = dirname(resolve(path));
    const at = (p: string | null) => (p === null ? null : resolve(base, p));
    return Object.freeze({
      ...config,
      source: { ...config.source, db_path: at(config.source.db_path) },
      validation: {
        ...config.validation,
        data_path: at(config.validation.data_path),
        controller: resolveAgentPaths(config.validation.controller, base),
      },
    });
  } catch (err) {
    const label = configLabel(path, sets);
    if (err instanceof ValidationFailed) throw new CliError(`${label}: ${err.message}`);
    throw err;
  }
}

/** The engine to fine-tune: the config's engine, or `--init-from`'s checkpoint. */
async function sftEngine(config: Readonly<SftConfig>, flags: SftFlags): Promise<Engine> {
  const spec = engineSpecOf(config.engine, flags);
  if (flags.initFrom === undefined) return createEngine(spec);
  try {
    return await createEngineFrom(spec, flags.initFrom);
  } catch (err) {
    if (err instanceof CheckpointInvalid) throw new CliError(`--init-from ${flags.initFrom}: ${err.message}`);
    throw err;
  }
}

/** Rollout id prefix of the reward validation before or after SFT (ids `PREFIX-dINDEX-0`). */
function validationPrefix(runName: string, phase: "before" | "after"): string {
  return `${runName}-val-${phase}`;
}

/**
 * With `validation.data_path`, checks that the run's name leaves room for its validation rollouts' ids.
 * @throws {CliError} naming the file when it cannot be read, or the name when it is too long for the ids
 */
function checkValidationIds(configPath: string, config: Readonly<SftConfig>): void {
  if (config.validation.data_path === null) return;
  const last = readDataFile("validation.data_path", config.validation.data_path).at(-1);
  if (last === undefined) return;
  const ids = (["before", "after"] as const).map((phase) =>
    rolloutOnceId(validationPrefix(config.name, phase), last.index),
  );
  checkRunNameRoom(`name (${configPath})`, config.name, ids);
}

/** Reward validation on a running stack: one greedy rollout per validation input against the served engine. */
function rewardValidator(config: Readonly<SftConfig>, stack: Stack, signal: AbortSignal) {
  const items = readJsonl(config.validation.data_path as string);
  const agentConfig = parseTrainerConfig({
    name: config.name,
    controller: config.validation.controller,
    rollout_timeout_seconds: config.validation.rollout_timeout_seconds,
    reward_fillna_value: config.reward_fillna_value,
  });
  return async (phase: "before" | "after"): Promise<number> => {
    await stack.client.deleteModels();
    await stack.client.upsertModels(stack.serving.endpoints.map((endpoint) => ({ model: "policy", endpoint })));
    const bar = startPhase(`val ${phase}`, items.length);
    const result = await runRolloutsOnce(stack.client, items, {
      prefix: validationPrefix(config.name, phase),
      isTrain: false,
      config: agentConfig,
      policyVersion: stack.engine.policyVersion,
      onProgress: (done) => bar.update(done),
      signal,
    });
    const summary = summariseRewards(result.rewards);
    bar.finish(`val reward ${phase} ${summary.mean.toFixed(3)}, ${result.failedIds.length} failed rollouts`);
    return summary.mean;
  };
}

/** Runs SFT with a progress bar, on a validation stack when the config asks for one. */
async function runWithProgress(
  base: Omit<SftRunOptions, "onRows" | "onStep">,
  config: Readonly<SftConfig>,
  logger: Logger,
): Promise<SftSummary> {
  const bar = startPhase("SFT", config.sft.steps);
  const options: SftRunOptions = {
    ...base,
    onRows: (rows) =>
      console.log(
        `arclight sft: ${rows.selected} of ${rows.matched} matching rollouts selected (mean reward ` +
          `${rows.selectedRewardMean.toFixed(3)}): ${rows.train.length} rows to train, ${rows.heldOut.length} held out`,
      ),
    onStep: (step, m) => bar.update(step, `loss ${m.loss.toFixed(3)}`),
  };
  if (config.validation.data_path === null) return runSft(options);
  const runDir = dirname(base.checkpointDir);
  const stackOptions = {
    runDir,
    modelName: "policy",
    engine: async () => base.engine,
    gatewayArgs: ["--val-temperature", "0"],
    // The validation agent is the config's own: the controller runs exactly it (docs/security.md).
    controller: {
      poolSize: config.validation.controller.pool_size,
      settings: localControllerSettings(config.validation.controller),
    },
    logger,
    ...(base.signal ? { closeOnAbort: base.signal } : {}),
  };
  return withStack(stackOptions, (stack) =>
    runSft({ ...options, validateReward: rewardValidator(config, stack, base.signal as AbortSignal) }),
  );
}

/** Prints the result and writes runs/NAME/sft-summary.json. */
function report(summary: SftSummary, runDir: string): void {
  const loss = (v: number | null) => (v === null ? "n/a" : v.toFixed(3));
  console.log(
    `arclight sft: ${summary.steps} steps, train loss ${summary.firstLoss.toFixed(3)} -> ${summary.lastLoss.toFixed(3)}, ` +
      `held-out loss ${loss(summary.heldOutLossBefore)} -> ${loss(summary.heldOutLossAfter)} nats/token, ` +
      `${Math.round(summary.tokensPerSecond)} tokens/s`,
  );
  if (summary.rewardBefore !== null) {
    console.log(`arclight sft: val reward ${loss(summary.rewardBefore)} -> ${loss(summary.rewardAfter)}`);
  }
  writeFileSync(join(runDir, "sft-summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
  console.log(
    `arclight sft: checkpoint ${summary.checkpointDir} (arclight train --init-from ${summary.checkpointDir})`,
  );
}

/** Runs the command; everything started here is stopped before returning. */
async function sft(configPath: string, flags: SftFlags): Promise<void> {
  const config = loadSftConfig(configPath, flags);
  checkRunName(`name (${configPath})`, config.name);
  checkValidationIds(configPath, config);
  const runDir = resolve("runs", config.name);
  const checkpointDir = sftCheckpointDir(runDir);
  if (existsSync(checkpointDir) || existsSync(join(runDir, "metrics.jsonl"))) {
    throw new CliError(
      `run ${config.name}: ${runDir} holds an earlier run; set another name (name: in the YAML, or --set name=…) or delete the folder`,
    );
  }
  const logger = pino({ level: logLevel(flags.logLevel) });
  const engine = await sftEngine(config, flags);
  const interrupt = listenForInterrupt("sft", "stopping after the current step");
  const sourceOptions = {
    gatewayUrl: config.source.gateway_url,
    dbPath: config.source.db_path,
    ...(flags.key !== undefined ? { key: flags.key } : {}),
    dbFlag: "source.db_path",
  };
  const source = await openSourceGateway(sourceOptions).catch((err: unknown) => {
    engine.dispose();
    throw err;
  });
  const trackers = startTrackers("sft", config.tracking, config.name, { ...config }, logger);
  let status: "finished" | "failed" = "failed";
  try {
    const base = {
      config,
      client: source.client,
      engine,
      checkpointDir,
      metricsPath: join(runDir, "metrics.jsonl"),
      onMetrics: (record: Record<string, number | null>) => trackers.logMetrics(record.step ?? 0, record),
    };
    const summary = await runWithProgress({ ...base, signal: interrupt.signal }, config, logger);
    trackers.logSummary("checkpoint_path", summary.checkpointDir);
    status = "finished";
    report(summary, runDir);
  } catch (err) {
    if (interrupt.signal.aborted) {
      console.error("arclight sft: stopped");
      process.exitCode = 130;
      return;
    }
    if (err instanceof RangeError) throw new CliError(err.message);
    throw err;
  } finally {
    interrupt.dispose();
    await trackers.finish(status);
    await source.close();
    engine.dispose();
  }
}

/**
 * Registers `arclight sft`.
 * @param program - the root commander program
 */
export function registerSft(program: Command): void {
  const command = program
    .command("sft")
    .description("Supervised fine-tuning on recorded rollouts (selection by run, tag, data ids, reward, best-of-N)")
    .argument("<config>", "SFT YAML config (see docs/sft-apo.md)")
    .option("--gateway-url <url>", "read the rollouts from this running gateway (overrides source)")
    .option(
      "--db <file>",
      "read the rollouts from this gateway SQLite file, e.g. runs/NAME/gateway.db (overrides source)",
    )
    .option("--key <key>", "API key of that gateway (also ARCLIGHT_KEY or AGL_KEY)")
    .option("--init-from <dir>", "start from an engine checkpoint's weights instead of a fresh model")
    .option("--engine <kind>", "embedded or torch (overrides the config's engine.kind)")
    .option("--preset <name>", "embedded engine model preset", "tiny")
    .option("--engine-seed <n>", "weight-init seed of the embedded engine", "0")
    .option("--log-level <level>", "pino log level", "warn")
    .option(
      "--set <key=value>",
      "override a config key (dotted path, YAML value), e.g. --set sft.steps=100 --set select.min_reward=1; repeatable",
      collectSetFlag,
    );
  addTrackingOptions(command).action(sft);
}
