/**
 * @module The calculator demo top to bottom: stack, teacher demonstrations, SFT warm start, validate, GRPO, plot;
 * everything lands in runs/NAME/.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { MODEL_PRESETS, type ModelPreset } from "../engine/embedded/config.js";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import type { Engine } from "../engine/engine.js";
import { RemoteEngine } from "../engine/remote/remote-engine.js";
import { dashboardUrl } from "../gateway/dashboard/url.js";
import { type Stack, type StackOptions, withStack } from "../run/stack.js";
import type { TrackerSet } from "../tracking/tracker.js";
import { engineCheckpointDir, loadLatestCheckpoint } from "../trainer/checkpoint.js";
import type { TrainerConfig } from "../trainer/config.js";
import type { DataItem } from "../trainer/data-order.js";
import { runTraining, totalStepsOf } from "../trainer/loop.js";
import { appendMetrics } from "../trainer/metrics.js";
import { localControllerSettings } from "../trainer/rollout-groups.js";
import { type RewardSummary, readRewards, runRolloutsOnce, summariseRewards } from "../trainer/rollouts-once.js";
import { combineReporters, RunPoster } from "../trainer/run-poster.js";
import { parseSftConfig, type SftConfig } from "../trainer/sft-config.js";
import { runSft } from "../trainer/sft-run.js";
import { trackingReporter } from "../trainer/tracking-reporter.js";
import { validationRolloutIds } from "../trainer/validation.js";
import { startPhase } from "./progress.js";
import { rewardTableReporter } from "./reporter.js";
import { demoValidationPrefix, teacherPrefix } from "./rollout-ids.js";
import { readRewardCurves, writeRewardPlots } from "./run-plots.js";
import {
  calculatorAgentClass,
  DEMO_MODEL,
  DEMO_POSITION_INIT,
  type DemoBudget,
  demoTrainerConfig,
  readDemoProblems,
  TORCH_DEMO_CONTEXT,
  TORCH_DEMO_MODEL,
  TORCH_TOKENIZER_DIR,
} from "./settings.js";
import { startTeacherChild } from "./teacher-child.js";

/** What to run. */
export interface DemoOptions {
  name: string;
  /** runs/NAME (absolute). */
  runDir: string;
  budget: DemoBudget;
  /** A model preset name, or null for the demo's own shape ({@link DEMO_MODEL}). Embedded engine only. */
  preset: ModelPreset | null;
  /** The policy's engine: embedded (absent), or torch on {@link TORCH_DEMO_MODEL} with this Python. */
  torch?: { python: string };
  seed: number;
  /** Threads per training step of the embedded engine (`EmbeddedEngineOptions.trainThreads`); default 1. */
  trainThreads?: number;
  /** Threads that decode in the embedded engine (`EmbeddedEngineOptions.decodeThreads`); default 1. */
  decodeThreads?: number;
  logger: Logger;
  /** Experiment trackers fed the GRPO run (config, steps, validation tables, checkpoints); absent: none. */
  trackers?: TrackerSet;
  /**
   * Opens and starts the trackers of the SFT warm start, a run of its own named `<name>-sft` (its steps count from 1
   * as GRPO's do), given the SFT config; absent: the warm start is not tracked.
   */
  startSftTrackers?: (config: Record<string, unknown>) => TrackerSet;
  /** Where the narration goes (default process.stdout). */
  out?: NodeJS.WriteStream;
  /** Aborting stops the whole stack at once; the run then rejects. */
  signal?: AbortSignal;
}

/** What a demo measured; also written to runs/NAME/summary.json. */
export interface DemoSummary {
  demonstrations: { recorded: number; kept: number; rows: number; mismatches: number; failed: number };
  sft: { steps: number; firstLoss: number; lastLoss: number };
  before: RewardSummary;
  after: RewardSummary;
  rlSteps: number;
  /** The final checkpoint's engine directory (what `arclight eval` loads). */
  checkpointDir: string;
  /** The SFT warm-start policy's checkpoint ({@link warmStartCheckpointDir}). */
  warmStartDir: string;
  wallSeconds: number;
}

const MODEL_NAME = "policy";

/** What every phase of one demo run works with. */
interface DemoRun {
  options: DemoOptions;
  stack: Stack;
  /** The policy (the stack serves it; the demo also resets its optimiser). */
  engine: Engine;
  config: Readonly<TrainerConfig>;
  out: NodeJS.WriteStream;
  say(line: string): void;
}

/** The demo's policy: its 2-block shape or a preset, or with `torch` the tiny Qwen2. */
async function createDemoEngine(options: DemoOptions, say: (line: string) => void): Promise<Engine> {
  if (options.torch !== undefined) {
    say(`[1/6] starting gateway (SQLite in ${options.runDir}), torch engine (${TORCH_DEMO_MODEL}), controller`);
    const { python } = options.torch;
    return RemoteEngine.start({
      python,
      model: TORCH_DEMO_MODEL,
      seed: options.seed,
      contextLength: TORCH_DEMO_CONTEXT,
    });
  }
  const model = options.preset === null ? DEMO_MODEL : MODEL_PRESETS[options.preset];
  say(
    `[1/6] starting gateway (SQLite in ${options.runDir}), embedded engine ` +
      `(${options.preset ?? "demo"}: ${model.n_layers} blocks x ${model.d_model}), controller`,
  );
  return EmbeddedEngine.create({
    config: model,
    seed: options.seed,
    // The demo's updates (SFT and GRPO) run while no agent does: `arclight demo` gives them 2 threads by default.
    trainThreads: options.trainThreads ?? 1,
    // Sampling runs while no update does: the same threads can decode the rollouts' calls in parallel.
    decodeThreads: options.decodeThreads ?? 1,
    ...(options.preset === null ? { positionInit: DEMO_POSITION_INIT } : {}),
  });
}

/** The demo's stack: gateway child with greedy validation and the budget's train temperature, controller. */
function demoStackOptions(options: DemoOptions, engine: Engine): StackOptions {
  const temperatures = ["--val-temperature", "0", "--train-temperature", String(options.budget.trainTemperature)];
  return {
    runDir: options.runDir,
    modelName: MODEL_NAME,
    engine: async () => engine,
    gatewayArgs: temperatures,
    controller: {
      poolSize: options.budget.poolSize,
      settings: localControllerSettings(
        demoTrainerConfig(options.name, options.budget, engine.contextLength).controller,
      ),
      baseEnv: { ...process.env, ...calculatorAgentClass().env },
    },
    logger: options.logger,
    ...(options.signal ? { closeOnAbort: options.signal } : {}),
  };
}

/** Runs the demo and returns the measured summary. @throws whatever a component throws (the stack stopped first) */
export async function runDemo(options: DemoOptions): Promise<DemoSummary> {
  const started = performance.now();
  const out = options.out ?? process.stdout;
  const say = (line: string) => void out.write(`${line}\n`);
  const engine = await createDemoEngine(options, say);
  return withStack(demoStackOptions(options, engine), async (stack) => {
    say(`      dashboard: ${dashboardUrl(stack.gatewayUrl, stack.key)}`);
    const config = demoTrainerConfig(options.name, options.budget, engine.contextLength);
    const run: DemoRun = { options, stack, engine, config, out, say };
    const { train, val } = demoData(run);
    const demoItems = train.slice(0, options.budget.demonstrations);
    const recorded = await recordDemonstrations(run, demoItems);
    const warm = await runWarmStart(run, demoItems.length, recorded.failed);
    const before = await validationBefore(run, val);
    const rlSteps = await runGrpo(run, train, val);
    const after = await validationAfter(run, val, rlSteps);
    const summary: DemoSummary = {
      demonstrations: warm.counts,
      sft: warm.sft,
      before,
      after,
      rlSteps,
      checkpointDir: finalCheckpointDir(options.runDir),
      warmStartDir: warmStartCheckpointDir(options.runDir),
      wallSeconds: (performance.now() - started) / 1000,
    };
    writeFileSync(join(options.runDir, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
    writeRewardPlots(options.runDir, readRewardCurves(join(options.runDir, "metrics.jsonl")), out);
    return summary;
  });
}

/** The demo's train and val problems (symbols form); the val set is also written to runs/NAME/val.jsonl. */
function demoData(run: DemoRun): { train: DataItem[]; val: DataItem[] } {
  const { config, options } = run;
  const { train, val } = readDemoProblems(config, options.budget);
  writeJsonl(join(options.runDir, "val.jsonl"), val);
  return { train, val };
}

/** Validation before RL, recorded as step 0 of metrics.jsonl. */
async function validationBefore(run: DemoRun, val: readonly DataItem[]): Promise<RewardSummary> {
  run.say(`[4/6] validation before RL: ${val.length} val problems, greedy`);
  const before = await evaluate(run, val, demoValidationPrefix(run.options.name, "before"));
  appendMetrics(join(run.options.runDir, "metrics.jsonl"), { step: 0, "val/reward_mean": before.mean });
  run.options.trackers?.logMetrics(0, { "val/reward_mean": before.mean });
  return before;
}

/** GRPO with the trainer loop on the served policy. @returns the steps run */
async function runGrpo(run: DemoRun, train: readonly DataItem[], val: readonly DataItem[]): Promise<number> {
  const { budget } = run.options;
  run.say(
    `[5/6] GRPO: ${budget.rlSteps} steps x ${budget.groupsPerStep} problems x ${budget.groupSize} rollouts ` +
      `(temperature ${budget.trainTemperature})`,
  );
  await run.stack.client.deleteModels();
  const poster = new RunPoster(run.stack.client, run.options.name, run.options.logger);
  poster.start({ ...run.config }, totalStepsOf(run.config, train.length), join(run.options.runDir, "metrics.jsonl"));
  const summary = await runTraining({
    config: run.config,
    client: run.stack.client,
    engine: run.engine,
    serving: run.stack.serving,
    trainData: train,
    valData: val,
    runDir: run.options.runDir,
    modelName: MODEL_NAME,
    logger: run.options.logger,
    reporter: combineReporters(
      rewardTableReporter(run.out),
      poster,
      ...(run.options.trackers ? [trackingReporter(run.options.trackers)] : []),
    ),
    ...(run.options.signal ? { signal: run.options.signal } : {}),
  });
  await poster.flush();
  return summary.steps;
}

/** Writes the demo's validation problems (`runs/NAME/val.jsonl`) so `arclight eval --data` can score the same set. */
function writeJsonl(path: string, items: readonly DataItem[]): void {
  writeFileSync(path, items.map((item) => `${JSON.stringify(item.input)}\n`).join(""));
}

/** `runs/NAME/warm-start/`, so `arclight eval` on it reproduces the before-RL figure. */
export function warmStartCheckpointDir(runDir: string): string {
  return join(runDir, "warm-start");
}

/** The engine directory of the run's latest checkpoint (what `arclight eval` loads). */
function finalCheckpointDir(runDir: string): string {
  const latest = loadLatestCheckpoint(runDir);
  if (latest === null) throw new Error(`${runDir}: the trainer saved no checkpoint`);
  return engineCheckpointDir(latest.dir);
}

/** Records demonstrations with the teacher registered as the model endpoint, then unregisters it. */
async function recordDemonstrations(run: DemoRun, items: readonly DataItem[]): Promise<{ failed: number }> {
  const { stack, config, options } = run;
  run.say(`[2/6] recording ${items.length} teacher demonstrations through the gateway`);
  // The torch policy's demonstrations are written in its own tokenizer's ids, so SFT trains it token for token.
  const hfTokenizer =
    run.engine instanceof RemoteEngine
      ? { dir: TORCH_TOKENIZER_DIR, vocabSize: run.engine.tokenizer.vocabSize }
      : undefined;
  const teacher = await startTeacherChild(options.budget.teacherMentalMathShare, hfTokenizer);
  try {
    await stack.client.deleteModels();
    await stack.client.upsertModels([{ model: MODEL_NAME, endpoint: teacher.endpoint, version: 0 }]);
    const phase = startPhase("teacher", items.length, run.out);
    const batch = await runRolloutsOnce(stack.client, items, {
      prefix: teacherPrefix(config.name),
      isTrain: true,
      config,
      policyVersion: 0,
      onProgress: (done) => phase.update(done),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const failed = batch.failedIds.length;
    phase.finish(
      `${items.length} demonstrations: teacher reward ${summariseRewards(batch.rewards).mean.toFixed(3)}, ${failed} failed`,
    );
    return { failed };
  } finally {
    await teacher.stop();
    // After an abort the gateway is already stopped: nothing to unregister.
    if (!options.signal?.aborted) await stack.client.deleteModels();
  }
}

/** The warm start as an `arclight sft` config: this run's teacher rollouts with reward 1, every row trained. */
function warmStartConfig(run: DemoRun): Readonly<SftConfig> {
  const { budget, seed } = run.options;
  return parseSftConfig({
    name: run.config.name,
    source: { gateway_url: run.stack.gatewayUrl },
    select: { id_prefix: `${teacherPrefix(run.config.name)}-d`, min_reward: 1 },
    aggregator: run.config.aggregator,
    sft: {
      steps: budget.sftSteps,
      batch_size: budget.sftBatchSize,
      learning_rate: budget.sftLearningRate,
      lr_decay_steps: budget.sftLrDecaySteps,
      weight_decay: 0,
      max_grad_norm: 1,
      micro_batch_size: 16,
      val_fraction: 0,
    },
    reward_fillna_value: run.config.reward_fillna_value,
    seed,
  });
}

/** SFT on the demonstrations through {@link runSft}, saving the warm-start policy; RL then starts a fresh optimiser. */
async function runWarmStart(run: DemoRun, recorded: number, failed: number) {
  const { budget, signal, runDir } = run.options;
  run.say(`[3/6] SFT warm start: ${budget.sftSteps} steps x ${budget.sftBatchSize} rows on the recorded traces`);
  const phase = startPhase("SFT", budget.sftSteps, run.out);
  let counts: DemoSummary["demonstrations"] = { recorded, kept: 0, rows: 0, mismatches: 0, failed };
  const config = warmStartConfig(run);
  // Tracked as `arclight sft` tracks: the SFT config, every step's metrics, the warm-start checkpoint's path.
  const trackers = run.options.startSftTrackers?.({ ...config });
  let status: "finished" | "failed" = "failed";
  let sft: Awaited<ReturnType<typeof runSft>>;
  try {
    sft = await runSft({
      config,
      client: run.stack.client,
      engine: run.engine,
      checkpointDir: warmStartCheckpointDir(runDir),
      metricsPath: null,
      onRows: (rows) => {
        counts = { recorded, kept: rows.selected, rows: rows.train.length, mismatches: rows.mismatches, failed };
      },
      onStep: (step, m) => phase.update(step, `loss ${m.loss.toFixed(3)}`),
      onMetrics: (record) => trackers?.logMetrics(record.step ?? 0, record),
      ...(signal ? { signal } : {}),
    });
    trackers?.logSummary("checkpoint_path", sft.checkpointDir);
    status = "finished";
  } finally {
    await trackers?.finish(status);
  }
  phase.finish(
    `${counts.kept} demonstrations kept, ${counts.rows} SFT rows, ${counts.mismatches} prefix mismatches; ` +
      `SFT loss ${sft.firstLoss.toFixed(3)} -> ${sft.lastLoss.toFixed(3)} nats/token`,
  );
  // RL starts with a fresh optimiser: AdamW moments carried over from SFT (larger gradients, β2 = 0.999) shrink the
  // first hundreds of RL updates (docs/benchmarks.md, Demo: a fresh optimiser scored higher after 5 GRPO steps).
  run.engine.resetOptimizer();
  return { counts, sft: { steps: sft.steps, firstLoss: sft.firstLoss, lastLoss: sft.lastLoss } };
}

/** The final validation: read back from the loop's own rollouts when it validated at that step, else run. */
async function validationAfter(run: DemoRun, items: readonly DataItem[], step: number): Promise<RewardSummary> {
  const { config, stack } = run;
  run.say(`[6/6] validation after RL: ${items.length} val problems, greedy`);
  if (config.val_interval === 0 || step % config.val_interval !== 0) {
    const after = await evaluate(run, items, demoValidationPrefix(config.name, "after"));
    appendMetrics(join(run.options.runDir, "metrics.jsonl"), { step, "val/reward_mean": after.mean });
    return after;
  }
  const ids = validationRolloutIds(config.name, step, items);
  const summary = summariseRewards(await readRewards(stack.client, ids, config.reward_fillna_value));
  run.say(`  val reward ${summary.mean.toFixed(3)}, solved ${(summary.solved * 100).toFixed(0)}% (step ${step})`);
  return summary;
}

/** Validation rollouts (`is_train: false`, greedy) against the engine, with a progress bar. */
async function evaluate(run: DemoRun, items: readonly DataItem[], prefix: string): Promise<RewardSummary> {
  const { stack, config } = run;
  const { signal } = run.options;
  const endpoints = stack.serving.endpoints.map((endpoint) => ({ model: MODEL_NAME, endpoint, version: 0 }));
  await stack.client.deleteModels();
  await stack.client.upsertModels(endpoints);
  const phase = startPhase("val", items.length, run.out);
  const batch = await runRolloutsOnce(stack.client, items, {
    prefix,
    isTrain: false,
    config,
    policyVersion: stack.engine.policyVersion,
    onProgress: (done) => phase.update(done),
    ...(signal ? { signal } : {}),
  });
  const summary = summariseRewards(batch.rewards);
  phase.finish(`val reward ${summary.mean.toFixed(3)}, solved ${(summary.solved * 100).toFixed(0)}%`);
  return summary;
}
