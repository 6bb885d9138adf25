/**
 * @module Bench: wall time to finish K training steps, synchronous vs collocated asynchronous, on one task whose
 * agents sleep a log-normal time around their model call (heavy-tailed durations). Real gateway, proxy, controller,
 * tiny embedded engine and node agents. Target: async >= 2x faster (Agent Lightning v1.0's collocated async figure).
 */
import { cpus } from "node:os";
import { join } from "node:path";
import { parseTrainerConfig } from "../src/trainer/config.js";
import { runTraining } from "../src/trainer/loop.js";
import { startTrainerStack, TEST_AGENT } from "../test/support/stack.js";

const K = 5;
const TRAIN_BATCH = 4;
const N = 2;
const ASYNC_BATCH = 12;
const SLEEP_MEDIAN_MS = 250;
const SLEEP_SIGMA = 1.25;

const data = Array.from({ length: 200 }, (_, i) => ({
  index: i,
  input: { prompt: `say a ${i}`, max_tokens: 8, sleep_ms: SLEEP_MEDIAN_MS, sleep_sigma: SLEEP_SIGMA },
}));

interface BenchRun {
  seconds: number;
  stale: number;
  carried: number;
  /** Largest group lag trained, and the token-weighted lag averaged over steps (versions). */
  lagMax: number;
  lagMean: number;
}

async function wallSeconds(asyncEnabled: boolean): Promise<BenchRun> {
  const stack = await startTrainerStack({ poolSize: ASYNC_BATCH * N });
  try {
    const config = parseTrainerConfig({
      name: asyncEnabled ? "bench-async" : "bench-sync",
      train_batch_size: TRAIN_BATCH,
      n: N,
      total_steps: K,
      controller: { command: ["node", TEST_AGENT], env_map: { AGL_INPUT: "input" } },
      aggregator: { level: "transition", max_prompt_length: 128, max_response_length: 64 },
      async: { enabled: asyncEnabled, async_train_batch_size: ASYNC_BATCH, max_staleness: 2 },
      checkpoint_interval: 0,
      val_interval: 0,
      pause_retry_after_seconds: 0,
    });
    const started = performance.now();
    const summary = await runTraining({
      config,
      client: stack.client,
      engine: stack.engine,
      serving: stack.serving,
      trainData: data,
      runDir: join(stack.dir, "runs", config.name),
      pollIntervalMs: 20,
    });
    const seconds = (performance.now() - started) / 1000;
    const sum = (key: string) => summary.metrics.reduce((a, m) => a + (m[key] ?? 0), 0);
    const lagMax = Math.max(...summary.metrics.map((m) => m["staleness/group_max"] ?? 0));
    const lagMean = sum("staleness/mean") / summary.metrics.length;
    return { seconds, stale: sum("async/stale_groups_dropped"), carried: sum("async/carried_over"), lagMax, lagMean };
  } finally {
    await stack.close();
  }
}

console.log(
  `setup: ${cpus().length} cores, K=${K} steps, train_batch_size=${TRAIN_BATCH} groups x n=${N}, ` +
    `async_train_batch_size=${ASYNC_BATCH}, max_staleness=2, agent sleeps log-normal(median ${SLEEP_MEDIAN_MS} ms, ` +
    `sigma ${SLEEP_SIGMA}) before and after one 8-token call, tiny engine`,
);
const sync = await wallSeconds(false);
console.log(`sync:  ${sync.seconds.toFixed(1)} s for ${K} steps (baseline)`);
const asyncRun = await wallSeconds(true);
console.log(
  `async: ${asyncRun.seconds.toFixed(1)} s for ${K} steps (stale groups dropped ${asyncRun.stale}, ` +
    `carried over per step summed ${asyncRun.carried}, lag of trained groups max ${asyncRun.lagMax}, ` +
    `token-weighted mean ${asyncRun.lagMean.toFixed(2)} versions)`,
);
const ratio = sync.seconds / asyncRun.seconds;
console.log(`ratio: async is ${ratio.toFixed(2)}x faster than sync (target >= 2x): ${ratio >= 2 ? "met" : "NOT met"}`);
