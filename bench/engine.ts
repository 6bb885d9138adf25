/**
 * @module Speed of the embedded engine on the 0.84M-param `bench` shape (d_model 128, 4 layers, 4 heads, context 128):
 * train tokens/s at B32×T128 with AdamW, full-forward logprobs tokens/s at 32×128, in-process sampling tokens/s with
 * 1, 16 and 64 concurrent `generate()` calls of 64 new tokens, and peak RSS. Targets come from issue 5; the
 * prototype column is what the throw-away prototype measured on this machine (shared/reference/tfjs-gpt).
 */
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import * as tf from "@tensorflow/tfjs";
import { EmbeddedEngine } from "../src/engine/embedded/engine.js";
import { Rng } from "../src/engine/embedded/rng.js";
import type { GenerationRequest, TrainRow } from "../src/engine/engine.js";

const BATCH = 32;
const SEQ_LEN = 128;
const NEW_TOKENS = 64;
const PROMPT_LEN = 16;
const REPS = 3;

function peakRssMiB(): number {
  const match = readFileSync("/proc/self/status", "utf8").match(/VmHWM:\s+(\d+)/);
  return match ? Math.round(Number(match[1]) / 1024) : Number.NaN;
}

/** CPU time (ms) of this process over the last {@link timeMs} measurement: on a shared machine wall time lies. */
let lastCpuMs = 0;

function report(name: string, value: number, unit: string, target?: number, prototype?: number): void {
  const parts = [`${name}: ${value.toFixed(0)} ${unit}`];
  if (target !== undefined) parts.push(`target ${target} (ratio ${(value / target).toFixed(2)})`);
  if (prototype !== undefined) parts.push(`prototype ${prototype} (ratio ${(value / prototype).toFixed(2)})`);
  console.log(parts.join(" | "));
}

/** Mean wall time (ms) of `reps` runs after one warm-up run. */
async function timeMs(run: () => Promise<unknown>, reps = REPS): Promise<number> {
  await run();
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < reps; i++) await run();
  const used = process.cpuUsage(cpu);
  lastCpuMs = (used.user + used.system) / 1000 / reps;
  return (performance.now() - start) / reps;
}

/** Prints wall and CPU time of one measurement and the throughput per CPU-second (what an idle core would give). */
function timing(label: string, wallMs: number, tokens: number): void {
  const perCpuSecond = (tokens * 1000) / lastCpuMs;
  console.log(
    `${label}: wall ${wallMs.toFixed(0)} ms, cpu ${lastCpuMs.toFixed(0)} ms, ${perCpuSecond.toFixed(0)} tok per cpu-s`,
  );
}

const rng = new Rng(123);
const randomIds = (n: number): number[] => Array.from({ length: n }, () => Math.floor(rng.nextFloat() * 256));

const engine = await EmbeddedEngine.create({ config: "bench", seed: 1 });
console.log(
  JSON.stringify({
    backend: tf.getBackend(),
    cores: availableParallelism(),
    loadavg1m: Number(loadavg()[0]!.toFixed(2)),
    node: process.version,
    config: engine.model.config,
    params: engine.model.parameterCount(),
  }),
);

// 1. Train: one AdamW step over 32 rows of 128 tokens (127 predicted positions each), SFT loss on every position.
const rows: TrainRow[] = Array.from({ length: BATCH }, () => {
  const tokenIds = randomIds(SEQ_LEN);
  return { tokenIds, lossMask: tokenIds.map((_, t) => (t > 0 ? 1 : 0)), advantages: tokenIds.map(() => 0) };
});
const trainOptions = { learningRate: 3e-4, weightDecay: 0.1, maxGradNorm: 1, microBatchSize: BATCH };
const trainMs = await timeMs(() => engine.trainStep(rows, { kind: "sft", aggregation: "token-mean" }, trainOptions));
timing(`train step B${BATCH}×T${SEQ_LEN}`, trainMs, BATCH * (SEQ_LEN - 1));
report("train", (BATCH * (SEQ_LEN - 1) * 1000) / trainMs, "tok/s", 1400, 1400);

// 2. Logprobs: full forward over 32×128.
const sequences = Array.from({ length: BATCH }, () => randomIds(SEQ_LEN));
const scoreMs = await timeMs(() => engine.logprobs(sequences));
timing(`logprobs ${BATCH}×${SEQ_LEN}`, scoreMs, BATCH * (SEQ_LEN - 1));
report("logprobs", (BATCH * (SEQ_LEN - 1) * 1000) / scoreMs, "tok/s", undefined, 3870);

// 3. Sampling: N concurrent generate() calls, each one sequence of 64 new tokens from a 16-token prompt.
for (const concurrency of [1, 16, 64]) {
  let tokens = 0;
  const run = async (): Promise<void> => {
    const calls = Array.from({ length: concurrency }, (_, i) => {
      const request: GenerationRequest = {
        promptTokenIds: randomIds(PROMPT_LEN),
        sampling: { temperature: 1, topP: 1, topK: 0, maxTokens: NEW_TOKENS, stopTokenIds: [], stop: [], seed: i },
      };
      return engine.generate([request]);
    });
    for (const [result] of await Promise.all(calls)) tokens += result!.tokenIds.length;
  };
  await run(); // warm-up
  tokens = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < REPS; i++) await run();
  const ms = (performance.now() - start) / REPS;
  const used = process.cpuUsage(cpu);
  lastCpuMs = (used.user + used.system) / 1000 / REPS;
  const perRun = tokens / REPS;
  timing(`sampling ${concurrency} concurrent × ${NEW_TOKENS} new (${perRun.toFixed(0)} tokens)`, ms, perRun);
  report(
    `sampling@${concurrency}`,
    (perRun * 1000) / ms,
    "tok/s",
    concurrency === 16 ? 2500 : undefined,
    concurrency === 16 ? 2707 : undefined,
  );
}

console.log(`peak RSS: ${peakRssMiB()} MiB`);
engine.dispose();
