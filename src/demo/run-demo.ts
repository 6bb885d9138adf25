/**
 * @module The calculator demo end to end, read top to bottom: start the stack; record teacher demonstrations
 * through the gateway; SFT warm start on those same traces; validate; GRPO with the trainer loop; plot. Everything
 * lands in runs/NAME/: gateway.db, metrics.jsonl, reward.svg, summary.json, warm-start/, checkpoints/.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { MODEL_PRESETS, type ModelPreset } from "../engine/embedded/config.js";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import { dashboardUrl } from "../gateway/dashboard/url.js";
import { batchOptionsFromConfig } from "../trainer/batch.js";
import { engineCheckpointDir, loadLatestCheckpoint } from "../trainer/checkpoint.js";
import type { TrainerConfig } from "../trainer/config.js";
import { type DataItem, readJsonl } from "../trainer/data-order.js";
import { runTraining, totalStepsOf } from "../trainer/loop.js";
import { appendMetrics } from "../trainer/metrics.js";
import { combineReporters, RunPoster } from "../trainer/run-poster.js";
import { collocatedServing } from "../trainer/serving.js";
import { startPhase } from "./progress.js";
import { rewardTableReporter } from "./reporter.js";
import { type RewardSummary, readRewards, runRolloutBatch, summariseRewards } from "./rollout-batch.js";
import { readRewardCurves, writeRewardPlots } from "./run-plots.js";
import { DEMO_MODEL, DEMO_POSITION_INIT, type DemoBudget, demoTrainerConfig, isDemoProblem } from "./settings.js";
import { type DemoStack, startDemoStack, startTeacherChild } from "./stack.js";
import { demonstrationRows, warmStart } from "./warm-start.js";

/** What to run. */
export interface DemoOptions {
  name: string;
  /** runs/NAME (absolute). */
  runDir: string;
  budget: DemoBudget;
  /** A model preset name, or null for the demo's own shape ({@link DEMO_MODEL}). */
  preset: ModelPreset | null;
  seed: number;
  logger: Logger;
  /** Where the narration goes (default process.stdout). */
  out?: NodeJS.WriteStream;
  /**
   * Aborting it stops the stack at once (gateway child, engine server, controller and every agent process); the
   * run then rejects.
   */
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

/**
 * Runs the demo.
 * @param options - run name and directory, budget, model preset, seed, logger
 * @returns the measured summary
 * @throws whatever a component throws (the stack is stopped first)
 */
export async function runDemo(options: DemoOptions): Promise<DemoSummary> {
  const started = performance.now();
  const out = options.out ?? process.stdout;
  const { budget } = options;
  const say = (line: string) => out.write(`${line}\n`);
  const model = options.preset === null ? DEMO_MODEL : MODEL_PRESETS[options.preset];
  say(
    `[1/6] starting gateway (SQLite in ${options.runDir}), embedded engine ` +
      `(${options.preset ?? "demo"}: ${model.n_layers} blocks x ${model.d_model}), controller`,
  );
  const engine = await EmbeddedEngine.create({
    config: model,
    seed: options.seed,
    ...(options.preset === null ? { positionInit: DEMO_POSITION_INIT } : {}),
  });
  const stack = await startDemoStack({
    runDir: options.runDir,
    engine,
    modelName: MODEL_NAME,
    trainTemperature: budget.trainTemperature,
    poolSize: budget.poolSize,
    logger: options.logger,
  });
  say(`      dashboard: ${dashboardUrl(stack.gatewayUrl, stack.gatewayKey)}`);
  const stopOnAbort = () => void stack.close();
  options.signal?.addEventListener("abort", stopOnAbort, { once: true });
  try {
    options.signal?.throwIfAborted();
    const config = demoTrainerConfig(options.name, budget, stack.engine.contextLength);
    const train = readJsonl(config.data.train_path).filter(isDemoProblem);
    const val = readJsonl(config.data.val_path as string)
      .filter(isDemoProblem)
      .slice(0, budget.valProblems);
    writeJsonl(join(options.runDir, "val.jsonl"), val);

    say(`[2/6] recording ${budget.demonstrations} teacher demonstrations through the gateway`);
    const demos = await recordDemonstrations(
      stack,
      config,
      train.slice(0, budget.demonstrations),
      budget,
      out,
      options.signal,
    );

    say(`[3/6] SFT warm start: ${budget.sftSteps} steps x ${budget.sftBatchSize} rows on the recorded traces`);
    const sft = await runWarmStart(stack, demos.rows, budget, options.seed, out, options.signal);
    await stack.engine.saveCheckpoint(warmStartCheckpointDir(options.runDir));
    // RL starts with a fresh optimiser: AdamW moments carried over from SFT (larger gradients, β2 = 0.999) shrink the
    // first hundreds of RL updates. Measured in-process (README, Demo): val reward after 5 GRPO steps 0.436 with the
    // moments carried over, 0.572–0.648 with a fresh optimiser.
    stack.engine.resetOptimizer();

    say(`[4/6] validation before RL: ${val.length} val problems, greedy`);
    const before = await evaluate(stack, config, val, `${options.name}-before`, out, options.signal);
    appendMetrics(join(options.runDir, "metrics.jsonl"), { step: 0, "val/reward_mean": before.mean });

    say(
      `[5/6] GRPO: ${budget.rlSteps} steps x ${budget.groupsPerStep} problems x ${budget.groupSize} rollouts ` +
        `(temperature ${budget.trainTemperature})`,
    );
    await stack.client.deleteModels();
    const poster = new RunPoster(stack.client, options.name, options.logger);
    poster.start({ ...config }, totalStepsOf(config, train.length), join(options.runDir, "metrics.jsonl"));
    const summary = await runTraining({
      config,
      client: stack.client,
      engine: stack.engine,
      serving: collocatedServing(stack.engineEndpoint),
      trainData: train,
      valData: val,
      runDir: options.runDir,
      modelName: MODEL_NAME,
      logger: options.logger,
      reporter: combineReporters(rewardTableReporter(out), poster),
      ...(options.signal ? { signal: options.signal } : {}),
    });

    await poster.flush();
    say(`[6/6] validation after RL: ${val.length} val problems, greedy`);
    const after = await validationAfter(stack, config, val, summary.steps, out, options.signal);
    if (summary.steps % config.val_interval !== 0 || config.val_interval === 0) {
      appendMetrics(join(options.runDir, "metrics.jsonl"), { step: summary.steps, "val/reward_mean": after.mean });
    }

    const result: DemoSummary = {
      demonstrations: demos.counts,
      sft,
      before,
      after,
      rlSteps: summary.steps,
      checkpointDir: finalCheckpointDir(options.runDir),
      warmStartDir: warmStartCheckpointDir(options.runDir),
      wallSeconds: (performance.now() - started) / 1000,
    };
    writeFileSync(join(options.runDir, "summary.json"), `${JSON.stringify(result, null, 2)}\n`);
    writeRewardPlots(options.runDir, readRewardCurves(join(options.runDir, "metrics.jsonl")), out);
    return result;
  } finally {
    options.signal?.removeEventListener("abort", stopOnAbort);
    await stack.close();
  }
}

/** Writes the demo's validation problems (`runs/NAME/val.jsonl`) so `arclight eval --data` can score the same set. */
function writeJsonl(path: string, items: readonly DataItem[]): void {
  writeFileSync(path, items.map((item) => `${JSON.stringify(item.input)}\n`).join(""));
}

/**
 * Where the demo saves the SFT warm-start policy (`runs/NAME/warm-start/`, an engine checkpoint), so
 * `arclight eval runs/NAME/warm-start --data runs/NAME/val.jsonl` reproduces the before-RL figure.
 * @param runDir - runs/NAME
 * @returns the checkpoint directory
 */
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
async function recordDemonstrations(
  stack: DemoStack,
  config: Readonly<TrainerConfig>,
  items: readonly DataItem[],
  budget: DemoBudget,
  out: NodeJS.WriteStream,
  signal: AbortSignal | undefined,
) {
  const teacher = await startTeacherChild(budget.teacherMentalMathShare);
  try {
    await stack.client.deleteModels();
    await stack.client.upsertModels([{ model: MODEL_NAME, endpoint: teacher.endpoint, version: 0 }]);
    const phase = startPhase("teacher", items.length, out);
    const batch = await runRolloutBatch(stack.client, items, {
      prefix: `${config.name}-teacher`,
      isTrain: true,
      config,
      policyVersion: 0,
      onProgress: (done) => phase.update(done),
      ...(signal ? { signal } : {}),
    });
    const built = demonstrationRows(batch.records, batch.rewards, batchOptionsFromConfig(config), 1);
    const summary = summariseRewards(batch.rewards);
    phase.finish(
      `${items.length} demonstrations: teacher reward ${summary.mean.toFixed(3)}, ${built.kept} kept, ` +
        `${built.rows.length} SFT rows, ${built.mismatches} prefix mismatches, ${batch.failed} failed`,
    );
    const counts = {
      recorded: items.length,
      kept: built.kept,
      rows: built.rows.length,
      mismatches: built.mismatches,
      failed: batch.failed,
    };
    return { rows: built.rows, counts };
  } finally {
    await teacher.stop();
    // After an abort the gateway is already stopped: nothing to unregister.
    if (!signal?.aborted) await stack.client.deleteModels();
  }
}

/** SFT on the demonstration rows, with a progress bar showing the loss. */
async function runWarmStart(
  stack: DemoStack,
  rows: Parameters<typeof warmStart>[1],
  budget: DemoBudget,
  seed: number,
  out: NodeJS.WriteStream,
  signal: AbortSignal | undefined,
) {
  const phase = startPhase("SFT", budget.sftSteps, out);
  const metrics = await warmStart(stack.engine, rows, {
    ...(signal ? { signal } : {}),
    steps: budget.sftSteps,
    batchSize: budget.sftBatchSize,
    learningRate: budget.sftLearningRate,
    seed,
    onStep: (step, m) => phase.update(step, `loss ${m.loss.toFixed(3)}`),
  });
  const firstLoss = metrics[0]?.loss ?? 0;
  const lastLoss = metrics.at(-1)?.loss ?? 0;
  phase.finish(`SFT loss ${firstLoss.toFixed(3)} -> ${lastLoss.toFixed(3)} nats/token`);
  return { steps: metrics.length, firstLoss, lastLoss };
}

/**
 * The validation after the last step: read back from the loop's own validation rollouts when it validated at that
 * step (ids `NAME-vSTEP-dINDEX-0`), else run it.
 */
async function validationAfter(
  stack: DemoStack,
  config: Readonly<TrainerConfig>,
  items: readonly DataItem[],
  step: number,
  out: NodeJS.WriteStream,
  signal: AbortSignal | undefined,
): Promise<RewardSummary> {
  if (config.val_interval === 0 || step % config.val_interval !== 0) {
    return evaluate(stack, config, items, `${config.name}-after`, out, signal);
  }
  const ids = items.map((item) => `${config.name}-v${step}-d${item.index}-0`);
  const summary = summariseRewards(await readRewards(stack.client, ids, config.reward_fillna_value));
  out.write(`  val reward ${summary.mean.toFixed(3)}, solved ${(summary.solved * 100).toFixed(0)}% (step ${step})\n`);
  return summary;
}

/** Validation rollouts (`is_train: false`, greedy) against the engine, with a progress bar. */
async function evaluate(
  stack: DemoStack,
  config: Readonly<TrainerConfig>,
  items: readonly DataItem[],
  prefix: string,
  out: NodeJS.WriteStream,
  signal: AbortSignal | undefined,
): Promise<RewardSummary> {
  await stack.client.deleteModels();
  await stack.client.upsertModels([{ model: MODEL_NAME, endpoint: stack.engineEndpoint, version: 0 }]);
  const phase = startPhase("val", items.length, out);
  const batch = await runRolloutBatch(stack.client, items, {
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
