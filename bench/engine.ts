/**
 * @module Speed of the embedded engine on the 0.88M-param `bench` shape (d_model 128, 4 layers, 4 heads, context 128,
 * vocab 261) against the same model in plain PyTorch (bench/engine-torch.py, same thread count) when a Python with
 * torch is found: train tokens/s at B32×T128 with AdamW, full-forward logprobs tokens/s at 32×128, sampling tokens/s
 * with 1, 16 and 64 concurrent `generate()` calls of 64 new tokens (PyTorch: one batch of 16 rows), the matmul peak
 * each side reaches on the step's main product, and peak RSS. Embedded and PyTorch rounds alternate, and the figures
 * are medians, because the machine is shared. Last, the same train step on 2 threads (`trainThreads: 2`, one gradient
 * worker thread) against PyTorch at 2 threads, with the peak RSS that adds.
 *
 * Usage: `npx tsx bench/engine.ts [--micro-batch N] [--rounds N]` (micro-batch: rows per forward/backward pass of the
 * B32 step; default 8, the trainer's `micro_batch_size` default; 32 runs the whole batch in one pass).
 */
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { parseArgs } from "node:util";
import * as tf from "@tensorflow/tfjs";
import { EmbeddedEngine } from "../src/engine/embedded/engine.js";
import { Rng } from "../src/engine/embedded/rng.js";
import { gemmAvailable } from "../src/engine/embedded/wasm-gemm.js";
import type { GenerationRequest, TrainRow } from "../src/engine/engine.js";
import { testPython } from "../src/testing/python.js";
import { TorchReference } from "./engine/torch-reference.js";

const BATCH = 32;
const SEQ_LEN = 128;
const NEW_TOKENS = 64;
const PROMPT_LEN = 16;
const TORCH_THREADS = 2;
/** PyTorch runs at the 2 threads and at 1 (the embedded engine runs on one thread). */
const TORCH_THREAD_COUNTS = [TORCH_THREADS, 1];
const USAGE = `usage: npx tsx bench/engine.ts [--micro-batch N] [--rounds N]   (or npm run bench -- engine [FLAG VALUE ...])
  --micro-batch N   rows per forward/backward pass of the B32 train step (default 8; 32: the whole batch in one pass)
  --rounds N        measured rounds of every figure, medians printed (default 5)
env ARCLIGHT_PYTHON  a Python with torch for the PyTorch columns (default .venv/bin/python)
env ARCLIGHT_WASM_FMA=0  the embedded engine's matrix products on XNNPACK instead of its fused multiply-add kernel`;

/** The command line's flags, or exit 2 with the usage (exit 0 for `--help`). */
function readFlags(): { microBatch: number; rounds: number } {
  let values: { "micro-batch": string; rounds: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      options: {
        "micro-batch": { type: "string", default: "8" },
        rounds: { type: "string", default: "5" },
        help: { type: "boolean" },
      },
    }) as { values: typeof values });
  } catch (err) {
    console.error(`bench/engine.ts: ${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const positive = (flag: string, text: string, max: number): number => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1 || n > max) {
      console.error(`bench/engine.ts: --${flag} must be an integer from 1 to ${max}, got ${JSON.stringify(text)}`);
      process.exit(2);
    }
    return n;
  };
  return {
    microBatch: positive("micro-batch", values["micro-batch"], BATCH),
    rounds: positive("rounds", values.rounds, 1000),
  };
}
const { microBatch: MICRO_BATCH, rounds: ROUNDS } = readFlags();

function peakRssMiB(): number {
  const match = readFileSync("/proc/self/status", "utf8").match(/VmHWM:\s+(\d+)/);
  return match ? Math.round(Number(match[1]) / 1024) : Number.NaN;
}

/** Wall and CPU milliseconds of one measured run. */
type Run = { wallMs: number; cpuMs: number };

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Wall and CPU milliseconds of one run of `fn`. */
async function measure(fn: () => unknown): Promise<Run> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  await fn();
  const used = process.cpuUsage(cpu);
  return { wallMs: performance.now() - start, cpuMs: (used.user + used.system) / 1000 };
}

/** One line: median wall and CPU of `runs`, tokens/s and tokens per CPU-second. */
function line(label: string, runs: Run[], tokens: number): number {
  const wall = median(runs.map((r) => r.wallMs));
  const cpu = median(runs.map((r) => r.cpuMs));
  const perSecond = (tokens * 1000) / wall;
  console.log(
    `${label}: ${perSecond.toFixed(0)} tok/s (median wall ${wall.toFixed(0)} ms of ${runs.length}, cpu ${cpu.toFixed(0)} ms, ${((tokens * 1000) / cpu).toFixed(0)} tok per cpu-s)`,
  );
  return perSecond;
}

const rng = new Rng(123);
const randomIds = (n: number): number[] => Array.from({ length: n }, () => Math.floor(rng.nextFloat() * 256));

const engine = await EmbeddedEngine.create({ config: "bench", seed: 1 });
/** Which kernel runs the embedded engine's matrix products (see src/engine/embedded/wasm-gemm.ts). */
const MATMUL_KERNEL = gemmAvailable() ? "wasm SIMD with fused multiply-add" : "XNNPACK, wasm SIMD";
const torch = await TorchReference.start(testPython(), engine.model.config, TORCH_THREADS);
console.log(
  JSON.stringify({
    backend: tf.getBackend(),
    matmul: MATMUL_KERNEL,
    cores: availableParallelism(),
    loadavg1m: Number(loadavg()[0]!.toFixed(2)),
    node: process.version,
    config: engine.model.config,
    params: engine.model.parameterCount(),
    microBatch: MICRO_BATCH,
    rounds: ROUNDS,
    pytorch: typeof torch === "string" ? `missing: ${torch}` : torch.header,
  }),
);

const fromTorch = (t: { seconds: number; cpu_seconds: number }): Run => ({
  wallMs: t.seconds * 1000,
  cpuMs: t.cpu_seconds * 1000,
});
/** Runs `fn` on the PyTorch reference at each thread count of {@link TORCH_THREADS}, 2 threads last. */
async function torchRounds(
  fn: (t: TorchReference) => Promise<{ seconds: number; cpu_seconds: number }>,
  into: Run[][],
) {
  if (typeof torch === "string") return;
  for (const [i, threads] of TORCH_THREAD_COUNTS.entries()) {
    await torch.threads(threads);
    into[i]!.push(fromTorch(await fn(torch)));
  }
}
/**
 * Prints a NOT VALID line when PyTorch ran slower on {@link TORCH_THREADS} threads than on one: its second thread
 * waited for a busy core (another job on the machine), so every ratio against the 2-thread column reads as met
 * without meaning it (docs/benchmarks.md, Engine).
 * @param what - the figure's name
 * @param rates - PyTorch's tokens/s in {@link TORCH_THREAD_COUNTS} order; empty when PyTorch was not measured
 */
function warnIfThreadsCollapsed(what: string, rates: number[]): void {
  const [two, one] = rates;
  if (two === undefined || one === undefined || two >= one) return;
  console.log(
    `NOT VALID (${what}): PyTorch ran slower on ${TORCH_THREADS} threads (${two.toFixed(0)} tok/s) than on 1 (${one.toFixed(0)}): ` +
      `the machine is busy, so ratios against ${TORCH_THREADS} threads mean nothing; run it again with nothing else running`,
  );
}

/** Best GFLOP/s of tfjs-wasm on one [n, k] @ [k, m] float32 product: best of 5 timings of `reps` products each. */
function tfjsMatmulGflops(n: number, k: number, m: number, reps: number): number {
  return tf.tidy(() => {
    const [a, b] = [tf.randomNormal([n, k]), tf.randomNormal([k, m])];
    tf.matMul(a, b).dataSync();
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 5; i++) {
      const start = performance.now();
      // The inner tidy returns nothing: tidy walks a returned container for tensors, a typed array element by element.
      for (let r = 0; r < reps; r++)
        tf.tidy(() => {
          tf.matMul(a, b).dataSync();
        });
      best = Math.min(best, (performance.now() - start) / reps);
    }
    return (2 * n * k * m) / best / 1e6;
  });
}

// 0. Peak: the best float32 matmul rate each side reaches on the step's largest product ([B·T, C] @ [C, 4C]).
const [pn, pk, pm] = [BATCH * (SEQ_LEN - 1), 128, 512];
const tfjsGflops = tfjsMatmulGflops(pn, pk, pm, 1);
const torchGflops = typeof torch === "string" ? Number.NaN : await torch.matmulGflops(pn, pk, pm);
console.log(
  `matmul [${pn},${pk}]x[${pk},${pm}] peak: embedded (${MATMUL_KERNEL}, 1 thread) ${tfjsGflops.toFixed(1)} GFLOP/s | PyTorch (${TORCH_THREADS} threads) ${torchGflops.toFixed(1)} GFLOP/s | ratio ${(tfjsGflops / torchGflops).toFixed(2)}`,
);

// 1. Train: one AdamW step over 32 rows of 128 tokens (127 predicted positions each), SFT loss on every position.
const rows: TrainRow[] = Array.from({ length: BATCH }, () => {
  const tokenIds = randomIds(SEQ_LEN);
  return { tokenIds, lossMask: tokenIds.map((_, t) => (t > 0 ? 1 : 0)), advantages: tokenIds.map(() => 0) };
});
const trainOptions = { learningRate: 3e-4, weightDecay: 0.1, maxGradNorm: 1, microBatchSize: MICRO_BATCH };
const trainTokens = BATCH * (SEQ_LEN - 1);
const step = () => engine.trainStep(rows, { kind: "sft", aggregation: "token-mean" }, trainOptions);
await step(); // warm-up
await torchRounds(
  (t) => t.train(BATCH, SEQ_LEN),
  TORCH_THREAD_COUNTS.map(() => []),
); // warm-up
/** {@link ROUNDS} rounds of one embedded step, then PyTorch's at each thread count: [embedded, PyTorch per count]. */
async function trainRounds(embeddedStep: () => unknown): Promise<[Run[], Run[][]]> {
  const embedded: Run[] = [];
  const torchRuns: Run[][] = TORCH_THREAD_COUNTS.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    embedded.push(await measure(embeddedStep));
    await torchRounds((t) => t.train(BATCH, SEQ_LEN), torchRuns);
  }
  return [embedded, torchRuns];
}
const [embeddedTrain, torchTrain] = await trainRounds(step);
const embeddedTrainRate = line(
  `train B${BATCH}×T${SEQ_LEN} (micro-batch ${MICRO_BATCH}) embedded`,
  embeddedTrain,
  trainTokens,
);
// Matmul FLOPs of a step: forward 2·(matrix weights)·tokens, backward twice that; attention QKᵀ and PV the same way,
// over the T(T+1)/2 visible (query, key) pairs that the attention kernels compute (wasm-attention.ts), not all T×T.
const matrixParams = engine.model.parameterCount() - SEQ_LEN * 128; // all but the position table (a gather)
const visiblePairs = (SEQ_LEN * (SEQ_LEN - 1)) / 2; // T' = SEQ_LEN − 1 positions: T'(T'+1)/2
const attentionFlops = 4 * 2 * 2 * BATCH * visiblePairs * 128; // 4 layers × (QKᵀ + PV) × 2 flops × C
const stepFlops = 3 * (2 * matrixParams * trainTokens + attentionFlops);
const achieved = stepFlops / median(embeddedTrain.map((r) => r.wallMs)) / 1e6;
console.log(
  `train matmul work ${(stepFlops / 1e9).toFixed(1)} GFLOP per step: ${achieved.toFixed(1)} GFLOP/s = ${((100 * achieved) / tfjsGflops).toFixed(0)}% of the embedded matmul peak`,
);
if (typeof torch === "string") console.log(`train PyTorch: not measured (${torch})`);
const torchTrainRates: number[] = [];
for (const [i, threads] of TORCH_THREAD_COUNTS.entries()) {
  if (typeof torch === "string") break;
  const torchRate = line(`train B${BATCH}×T${SEQ_LEN} PyTorch ${threads} thread(s)`, torchTrain[i]!, trainTokens);
  torchTrainRates.push(torchRate);
  const target = threads === TORCH_THREADS ? " | target >= 0.50" : "";
  console.log(
    `train ratio embedded/PyTorch ${threads} thread(s): ${(embeddedTrainRate / torchRate).toFixed(2)}${target}`,
  );
}
warnIfThreadsCollapsed("train", torchTrainRates);

console.log(`peak RSS after training: ${peakRssMiB()} MiB`);

// 2. Logprobs: full forward over 32×128.
const sequences = Array.from({ length: BATCH }, () => randomIds(SEQ_LEN));
await engine.logprobs(sequences);
const scoring: Run[] = [];
for (let round = 0; round < ROUNDS; round++) scoring.push(await measure(() => engine.logprobs(sequences)));
line(`logprobs ${BATCH}×${SEQ_LEN}`, scoring, BATCH * (SEQ_LEN - 1));

console.log(`peak RSS after logprobs: ${peakRssMiB()} MiB`);

// 3. Sampling: N concurrent generate() calls, each one sequence of 64 new tokens from a 16-token prompt.
async function sampleConcurrent(concurrency: number, on: EmbeddedEngine = engine): Promise<number> {
  const calls = Array.from({ length: concurrency }, (_, i) => {
    const request: GenerationRequest = {
      promptTokenIds: randomIds(PROMPT_LEN),
      sampling: { temperature: 1, topP: 1, topK: 0, maxTokens: NEW_TOKENS, stopTokenIds: [], stop: [], seed: i },
    };
    return on.generate([request]);
  });
  let tokens = 0;
  for (const [result] of await Promise.all(calls)) tokens += result!.tokenIds.length;
  return tokens;
}
/** PyTorch's batched sampling rate at 16 rows on `TORCH_THREADS` threads (tokens/s), once measured. */
let torchSampling16 = Number.NaN;
for (const concurrency of [1, 16, 64]) {
  await sampleConcurrent(concurrency); // warm-up
  const runs: (Run & { tokens: number })[] = [];
  const torchRuns: Run[][] = TORCH_THREAD_COUNTS.map(() => []);
  const withTorch = concurrency === 16;
  if (withTorch)
    await torchRounds(
      (t) => t.sample(concurrency, PROMPT_LEN, NEW_TOKENS),
      TORCH_THREAD_COUNTS.map(() => []),
    );
  for (let round = 0; round < ROUNDS; round++) {
    let tokens = 0;
    const m = await measure(async () => {
      tokens = await sampleConcurrent(concurrency);
    });
    runs.push({ ...m, tokens });
    if (withTorch) await torchRounds((t) => t.sample(concurrency, PROMPT_LEN, NEW_TOKENS), torchRuns);
  }
  // Requests stop early on a sampled end-of-text token: the median run's token count.
  const tokensPerRun = median(runs.map((r) => r.tokens));
  const rate = line(
    `sampling ${concurrency} concurrent × ${NEW_TOKENS} new (~${tokensPerRun} tokens)`,
    runs,
    tokensPerRun,
  );
  for (const [i, threads] of TORCH_THREAD_COUNTS.entries()) {
    if (!withTorch || typeof torch === "string") break;
    const label = `sampling PyTorch one batch of ${concurrency} × ${NEW_TOKENS} new, ${threads} thread(s)`;
    const torchRate = line(label, torchRuns[i]!, concurrency * NEW_TOKENS);
    if (threads === TORCH_THREADS) torchSampling16 = torchRate;
    const target = threads === TORCH_THREADS ? " | target >= 1.00" : "";
    console.log(
      `sampling@${concurrency} ratio embedded/PyTorch ${threads} thread(s): ${(rate / torchRate).toFixed(2)}${target}`,
    );
  }
}
if (typeof torch === "string") console.log(`sampling PyTorch: not measured (${torch})`);

// Decoding 16 sequences multiplies [16, C] by each weight: the peak each side reaches on that product bounds sampling
// the way the large product's peak bounds training.
const decodeTfjs = tfjsMatmulGflops(16, 128, 512, 200);
let decodeTorch = Number.NaN;
if (typeof torch !== "string") {
  await torch.threads(TORCH_THREADS);
  decodeTorch = await torch.matmulGflops(16, 128, 512);
}
console.log(
  `decode-shape matmul [16,128]x[128,512] peak: embedded (${MATMUL_KERNEL}, 1 thread) ${decodeTfjs.toFixed(1)} GFLOP/s | PyTorch (${TORCH_THREADS} threads) ${decodeTorch.toFixed(1)} GFLOP/s | ratio ${(decodeTfjs / decodeTorch).toFixed(2)}`,
);
// The most sampling could reach if decoding were nothing but its weight products at that peak: 2·(matrix weights)
// FLOPs per token (attention over ≤ 80 cached positions adds under 2% here).
const samplingBound = (decodeTfjs * 1e9) / (2 * matrixParams);
console.log(
  `sampling bound at the decode-shape peak: ${samplingBound.toFixed(0)} tok/s = ${(samplingBound / torchSampling16).toFixed(2)} of PyTorch's batched sampling at 16 | target >= 1.00`,
);

console.log(`peak RSS: ${peakRssMiB()} MiB | target <= 512 | load average after ${loadavg()[0]!.toFixed(2)}`);
engine.dispose();

// 4. Train on 2 threads: the same step split across this thread and one gradient worker (parallel-train.ts), the same
// thread count as PyTorch's 2-thread column; rounds alternate again.
const parallel = await EmbeddedEngine.create({ config: "bench", seed: 1, trainThreads: TORCH_THREADS });
const parallelStep = () => parallel.trainStep(rows, { kind: "sft", aggregation: "token-mean" }, trainOptions);
await parallelStep(); // warm-up: starts the worker
const [parallelTrain, torchTrain2] = await trainRounds(parallelStep);
const parallelRate = line(
  `train B${BATCH}×T${SEQ_LEN} (micro-batch ${MICRO_BATCH}) embedded ${TORCH_THREADS} threads`,
  parallelTrain,
  trainTokens,
);
console.log(`train embedded ${TORCH_THREADS} threads / 1 thread: ${(parallelRate / embeddedTrainRate).toFixed(2)}`);
if (typeof torch !== "string") {
  const torchRate = line(
    `train B${BATCH}×T${SEQ_LEN} PyTorch ${TORCH_THREADS} thread(s)`,
    torchTrain2[0]!,
    trainTokens,
  );
  console.log(
    `train ratio embedded ${TORCH_THREADS} threads/PyTorch ${TORCH_THREADS} threads: ` +
      `${(parallelRate / torchRate).toFixed(2)} | target >= 0.50`,
  );
  const oneThreadRate = (trainTokens * 1000) / median(torchTrain2[1]!.map((r) => r.wallMs));
  warnIfThreadsCollapsed(`train on ${TORCH_THREADS} threads`, [torchRate, oneThreadRate]);
  // The most a step could reach if all its matmul work ran at the embedded peak on every thread.
  const trainBound = trainTokens / (stepFlops / (TORCH_THREADS * tfjsGflops * 1e9));
  console.log(
    `train bound at the embedded matmul peak × ${TORCH_THREADS} threads: ${trainBound.toFixed(0)} tok/s = ` +
      `${(trainBound / torchRate).toFixed(2)} of PyTorch ${TORCH_THREADS} threads | target >= 0.50`,
  );
}
console.log(`peak RSS with the gradient worker: ${peakRssMiB()} MiB | load average after ${loadavg()[0]!.toFixed(2)}`);
parallel.dispose();

// 5. Sampling on 2 threads: 16 concurrent calls shared between this thread's decode loop and one decode worker's
// (decode-thread.ts), against PyTorch's batch of 16 on 2 threads; rounds alternate again.
const decoding = await EmbeddedEngine.create({ config: "bench", seed: 1, decodeThreads: TORCH_THREADS });
while (decoding.readyDecodeThreads < TORCH_THREADS - 1) await new Promise((resolve) => setTimeout(resolve, 50));
// Warm-up: the worker's code has not run yet (this thread's ran the rounds above), so a few rounds, not one.
for (let round = 0; round < 3; round++) await sampleConcurrent(16, decoding);
const decodeRuns: (Run & { tokens: number })[] = [];
const torchDecodeRuns: Run[][] = TORCH_THREAD_COUNTS.map(() => []); // [0]: 2 threads
for (let round = 0; round < ROUNDS; round++) {
  let tokens = 0;
  const m = await measure(async () => {
    tokens = await sampleConcurrent(16, decoding);
  });
  decodeRuns.push({ ...m, tokens });
  if (typeof torch !== "string") await torchRounds((t) => t.sample(16, PROMPT_LEN, NEW_TOKENS), torchDecodeRuns);
}
const decodeRate = line(
  `sampling 16 concurrent × ${NEW_TOKENS} new, embedded ${TORCH_THREADS} decode threads (~${median(decodeRuns.map((r) => r.tokens))} tokens)`,
  decodeRuns,
  median(decodeRuns.map((r) => r.tokens)),
);
if (typeof torch !== "string") {
  const torchRate = line(
    `sampling PyTorch one batch of 16 × ${NEW_TOKENS} new, ${TORCH_THREADS} thread(s)`,
    torchDecodeRuns[0]!,
    16 * NEW_TOKENS,
  );
  console.log(
    `sampling@16 ratio embedded ${TORCH_THREADS} decode threads/PyTorch ${TORCH_THREADS} threads: ${(decodeRate / torchRate).toFixed(2)} | target >= 1.00`,
  );
}
console.log(`peak RSS with the decode worker: ${peakRssMiB()} MiB | load average after ${loadavg()[0]!.toFixed(2)}`);
decoding.dispose();
if (typeof torch !== "string") torch.close();
