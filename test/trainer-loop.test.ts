/**
 * Loop behaviours through real components: async never splits a group and bounds staleness; a crashing agent fails
 * only its rollout; a resumed run equals an uninterrupted one (metrics and weights).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { TrainRow } from "../src/engine/engine.js";
import { loadLatestCheckpoint } from "../src/trainer/checkpoint.js";
import { parseTrainerConfig, type TrainerConfigInput } from "../src/trainer/config.js";
import { runTraining, type TrainLoopOptions } from "../src/trainer/loop.js";
import { startTrainerStack, TEST_AGENT, type TrainerStack } from "./support/stack.js";

const stacks: TrainerStack[] = [];
afterEach(async () => {
  for (const stack of stacks.splice(0)) await stack.close();
});

async function stack(): Promise<TrainerStack> {
  const started = await startTrainerStack();
  stacks.push(started);
  return started;
}

function config(overrides: TrainerConfigInput) {
  return parseTrainerConfig({
    name: "loop",
    n: 2,
    rollout_timeout_seconds: 60,
    controller: { command: ["node", TEST_AGENT], env_map: { AGL_INPUT: "input" } },
    aggregator: { level: "trajectory", max_prompt_length: 128, max_response_length: 96 },
    optimizer: { learning_rate: 1e-3 },
    checkpoint_interval: 0,
    val_interval: 0,
    pause_retry_after_seconds: 0,
    ...overrides,
  });
}

const items = (n: number, extra: object = {}) =>
  Array.from({ length: n }, (_, i) => ({ index: i, input: { prompt: `say a ${i}`, ...extra } }));

function options(s: TrainerStack, overrides: Partial<TrainLoopOptions> & Pick<TrainLoopOptions, "config">) {
  return {
    client: s.client,
    engine: s.engine,
    serving: s.serving,
    trainData: items(6),
    runDir: join(s.dir, "runs", "loop"),
    pollIntervalMs: 20,
    ...overrides,
  };
}

function readMetrics(runDir: string): Record<string, number | null>[] {
  return readFileSync(join(runDir, "metrics.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, number | null>);
}

describe("trainer loop", () => {
  it("async trains whole groups only, carries the rest over, and never trains past max_staleness", async () => {
    const s = await stack();
    const cfg = config({
      train_batch_size: 1,
      total_steps: 3,
      async: { enabled: true, async_train_batch_size: 3, max_staleness: 1 },
    });
    // Log-normal sleeps make groups finish out of launch order.
    const summary = await runTraining(
      options(s, { config: cfg, trainData: items(6, { sleep_ms: 40, sleep_sigma: 1 }) }),
    );
    expect(summary.steps).toBe(3);
    for (const m of summary.metrics) {
      expect(m.rollouts).toBe(2); // one whole group of n = 2, never a part of one
      expect(m.groups).toBe(1);
      expect(m["staleness/max"]).toBeLessThanOrEqual(1);
    }
    expect(summary.metrics.some((m) => (m["async/carried_over"] ?? 0) > 0)).toBe(true);
  });

  it("async admits groups by the staleness budget: slow groups are waited for and trained, none dropped", async () => {
    const s = await stack();
    const cfg = config({
      train_batch_size: 1,
      total_steps: 6,
      async: { enabled: true, async_train_batch_size: 3, max_staleness: 1 },
    });
    // Inputs 0 and 3 are slow (1.2 s before and after their call) and rewarded 1; the rest answer at once, reward 0.
    // Six steps of one group use all six inputs exactly once, so every launched group must train.
    const trainData = Array.from({ length: 6 }, (_, i) => ({
      index: i,
      input: i % 3 === 0 ? { prompt: `say a ${i}`, sleep_ms: 1200, sleep_sigma: 0, reward: 1 } : { reward: 0 },
    }));
    const summary = await runTraining(options(s, { config: cfg, trainData }));
    expect(summary.steps).toBe(6);
    const slowSteps = summary.metrics.filter((m) => m["reward/all_rollouts_mean"] === 1);
    expect(slowSteps).toHaveLength(2);
    for (const m of summary.metrics) {
      expect(m["async/stale_groups_dropped"]).toBe(0);
      expect(m["staleness/group_max"]).toBeLessThanOrEqual(1);
      expect(m["staleness/max"]).toBeLessThanOrEqual(1);
      // (max_staleness + 1) · train_batch_size = 2 groups in flight at most, one trained: one carried over.
      expect(m["async/carried_over"]).toBeLessThanOrEqual(1);
    }
    const written = readMetrics(join(s.dir, "runs", "loop"));
    expect(written.map((m) => m["staleness/group_mean"])).toEqual(
      summary.metrics.map((m) => m["staleness/group_mean"]),
    );
  });

  it("a resume with a tighter staleness budget drops (and counts) only the pending groups past their deadline", async () => {
    const s = await stack();
    const loose = { train_batch_size: 1, total_steps: 6, checkpoint_interval: 1 };
    await runTraining(
      options(s, {
        config: config({ ...loose, async: { enabled: true, async_train_batch_size: 4, max_staleness: 3 } }),
        stopAfterSteps: 3,
      }),
    );
    const saved = loadLatestCheckpoint(join(s.dir, "runs", "loop"))!.state;
    expect(saved.policyVersion).toBe(3);
    // With max_staleness 1 at version 3, every pending group has its deadline at 3 or before, with one place left.
    expect(saved.pending.length).toBeGreaterThan(1);
    const tight = config({ ...loose, async: { enabled: true, async_train_batch_size: 4, max_staleness: 1 } });
    const resumed = await runTraining(options(s, { config: tight, resume: true }));
    expect(resumed.steps).toBe(6);
    expect(resumed.metrics[0]!["async/stale_groups_dropped"]).toBe(saved.pending.length - 1);
    for (const m of resumed.metrics) expect(m["staleness/group_max"]).toBeLessThanOrEqual(1);
    expect(resumed.metrics.slice(1).every((m) => m["async/stale_groups_dropped"] === 0)).toBe(true);
  });

  it("sync with mismatch.recompute_old_logprobs recomputes π_old and reports the mismatch of the same weights as ~0", async () => {
    const s = await stack();
    const cfg = config({
      train_batch_size: 1,
      total_steps: 1,
      mismatch: { recompute_old_logprobs: true, mask_level: "token", mask_low: 0.5, mask_high: 2 },
    });
    const summary = await runTraining(options(s, { config: cfg, trainData: items(1) }));
    const [m] = summary.metrics;
    // The sampler is the trainer's own engine at the same version: the ratios are 1 up to float rounding.
    expect(m?.["mismatch/kl"]).toBeGreaterThanOrEqual(0);
    expect(m?.["mismatch/kl"]).toBeLessThan(1e-4);
    expect(m?.["mismatch/ratio_p50"]).toBeCloseTo(1, 2);
    expect(m?.["mismatch/masked_fraction"]).toBe(0);
    const plain = await runTraining(
      options(s, { config: config({ name: "plain", train_batch_size: 1, total_steps: 1 }), trainData: items(1) }),
    );
    expect(plain.metrics[0]?.["mismatch/kl"]).toBeNull();
  });

  it("dynamic sampling drops groups whose rollouts all got one reward and samples more until the batch is full", async () => {
    const s = await stack();
    // Even inputs: every rollout gets 1 (no spread); odd inputs: reward = the rollout's index in its group (0, 1).
    const trainData = Array.from({ length: 8 }, (_, i) => ({
      index: i,
      input: i % 2 === 0 ? { prompt: `say a ${i}`, reward: 1 } : { prompt: `say a ${i}`, reward_by_index: true },
    }));
    const cfg = config({
      train_batch_size: 2,
      total_steps: 2,
      dynamic_sampling: { enabled: true, max_extra_rounds: 4 },
    });
    const summary = await runTraining(options(s, { config: cfg, trainData }));
    for (const m of summary.metrics) {
      expect(m["sampling/rollouts_kept"]).toBe(4); // two groups of n = 2, each with a spread
      expect(m.rollouts).toBe(4);
      expect(m.zero_adv_groups).toBe(0);
      expect(m["sampling/rollouts_sampled"]).toBe(4 + 2 * (m["sampling/groups_dropped"] as number));
    }
    const dropped = summary.metrics.reduce((a, m) => a + (m["sampling/groups_dropped"] as number), 0);
    expect(dropped).toBeGreaterThan(0);

    // Only flat groups: after max_extra_rounds the step trains on what it kept (nothing), and says what it cost.
    const flat = items(8, { reward: 1 });
    const none = config({
      name: "flat",
      train_batch_size: 2,
      total_steps: 1,
      dynamic_sampling: { enabled: true, max_extra_rounds: 1 },
    });
    const [only] = (await runTraining(options(s, { config: none, trainData: flat, runDir: join(s.dir, "runs", "f") })))
      .metrics;
    expect(only?.["sampling/rollouts_sampled"]).toBe(8);
    expect(only?.["sampling/rollouts_kept"]).toBe(0);
    expect(only?.["sampling/extra_rounds"]).toBe(1);
    expect(only?.rows).toBe(0);
  }, 120_000);

  it("a crashing agent fails only its rollout: dropped from its group, the step trains on the rest", async () => {
    const s = await stack();
    const cfg = config({ train_batch_size: 2, total_steps: 1, failed_rollouts: "drop" });
    const summary = await runTraining(
      options(s, { config: cfg, trainData: items(2, { crash: true, crash_index: 0 }) }),
    );
    const [m] = summary.metrics;
    expect(m?.["rollouts/failed"]).toBe(2);
    expect(m?.["rollouts/failed_dropped"]).toBe(2);
    expect(m?.rollouts).toBe(2);
    expect(summary.policyVersion).toBe(1);
    const states = await Promise.all(
      ["loop-e0-d0-0", "loop-e0-d0-1", "loop-e0-d1-0", "loop-e0-d1-1"].map(
        async (id) => (await s.client.getRollout(id)).rollout.status.state,
      ),
    );
    expect(states.sort()).toEqual(["failed", "failed", "succeeded", "succeeded"]);
  });

  it("a crashing agent's rollout trains with reward_fillna_value when failed_rollouts is fillna", async () => {
    const s = await stack();
    const cfg = config({ train_batch_size: 1, total_steps: 1, failed_rollouts: "fillna", reward_fillna_value: -1 });
    const summary = await runTraining(
      options(s, { config: cfg, trainData: items(1, { crash: true, crash_index: 1 }) }),
    );
    const [m] = summary.metrics;
    expect(m?.rollouts).toBe(2);
    expect(m?.reward_filled).toBe(1);
    expect(m?.["rollouts/failed"]).toBe(1);
    expect(m?.["rollouts/failed_dropped"]).toBe(0);
  });

  it("ppo_mini_batch_size splits each PPO epoch into one update per mini-batch of whole groups", async () => {
    const s = await stack();
    const calls: TrainRow[][] = [];
    const trainStep = s.engine.trainStep.bind(s.engine);
    s.engine.trainStep = async (rows, loss, optimizer) => {
      calls.push(rows);
      return trainStep(rows, loss, optimizer);
    };
    const cfg = config({ train_batch_size: 3, total_steps: 1, ppo_mini_batch_size: 2, max_ppo_update_times: 2 });
    const summary = await runTraining(options(s, { config: cfg }));
    // 3 groups in mini-batches of 2 groups: [2 groups, 1 group], twice.
    expect(calls).toHaveLength(4);
    const epoch = (k: number) => [...(calls[2 * k] ?? []), ...(calls[2 * k + 1] ?? [])].map((r) => r.tokenIds);
    expect(epoch(1)).toEqual(epoch(0));
    expect(epoch(0)).toHaveLength(summary.metrics[0]?.rows ?? -1);
    // Each rollout has at least one row, so the 1-group mini-batch holds at least n rows and fewer than 2 groups' worth.
    expect(calls[1]?.length).toBeGreaterThanOrEqual(2);
    expect(calls[0]?.length).toBeGreaterThan(calls[1]?.length ?? 0);
    expect(summary.policyVersion).toBe(1);

    calls.length = 0;
    const whole = await stack();
    const wholeTrainStep = whole.engine.trainStep.bind(whole.engine);
    whole.engine.trainStep = async (rows, loss, optimizer) => {
      calls.push(rows);
      return wholeTrainStep(rows, loss, optimizer);
    };
    await runTraining(options(whole, { config: config({ train_batch_size: 3, total_steps: 1 }) }));
    expect(calls).toHaveLength(1);
  });

  it("resuming from a checkpoint continues at the same step and data order, equal to an uninterrupted run", async () => {
    const cfg = config({ train_batch_size: 2, total_steps: 3, checkpoint_interval: 1 });
    const a = await stack();
    await runTraining(options(a, { config: cfg }));
    const probe = [[10, 20, 30, 40, 50, 60, 70, 80]];
    const weightsA = await a.engine.logprobs(probe);

    const b = await stack();
    const stopped = await runTraining(options(b, { config: cfg, stopAfterSteps: 2 }));
    expect(stopped.steps).toBe(2);
    // Scramble the live weights: the resumed run must take them from the checkpoint, not from memory.
    const row = { tokenIds: [1, 2, 3, 4], lossMask: [0, 1, 1, 1], advantages: [0, 1, 1, 1] };
    await b.engine.trainStep(
      [row],
      { kind: "sft", aggregation: "token-mean" },
      {
        learningRate: 0.1,
        weightDecay: 0,
        maxGradNorm: 0,
        microBatchSize: 8,
      },
    );
    const resumed = await runTraining(options(b, { config: cfg, resume: true }));
    expect(resumed.steps).toBe(3);
    expect(resumed.metrics.map((m) => m.step)).toEqual([3]);

    const withoutTimes = (rows: Record<string, number | null>[]) =>
      rows.map((m) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith("time/"))));
    expect(withoutTimes(readMetrics(join(b.dir, "runs", "loop")))).toEqual(
      withoutTimes(readMetrics(join(a.dir, "runs", "loop"))),
    );
    expect(await b.engine.logprobs(probe)).toEqual(weightsA);
  });
});
