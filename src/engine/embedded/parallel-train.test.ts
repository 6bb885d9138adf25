/**
 * @module Tests of data-parallel training steps: the row split, equality with a one-thread step (SFT and PPO with
 * every optional per-token array), tensor leaks, a worker thread that dies, and a process that exits on its own with
 * idle workers.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as tf from "@tensorflow/tfjs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { LossConfig, OptimizerConfig, TrainMetrics, TrainRow } from "../engine.js";
import { AdamW } from "./adamw.js";
import { initWasmBackend } from "./backend.js";
import { EmbeddedEngine } from "./engine.js";
import { Gpt } from "./model.js";
import { GradientWorkerFailed, ParallelTrainer, splitRows } from "./parallel-train.js";
import { initialValues } from "./params.js";
import { Rng } from "./rng.js";
import { trainStep } from "./train.js";

beforeAll(() => initWasmBackend());

let disposers: (() => void)[] = [];
afterEach(() => {
  for (const d of disposers) d();
  disposers = [];
});

const config = { vocab: 261, d_model: 32, n_layers: 2, n_heads: 4, context: 48 };
const settings: OptimizerConfig = { learningRate: 3e-3, weightDecay: 0.01, maxGradNorm: 1, microBatchSize: 2 };
const sft: LossConfig = { kind: "sft", aggregation: "token-mean" };
const ppo: LossConfig = {
  kind: "ppo",
  clipLow: 0.2,
  clipHigh: 0.28,
  dualClip: 3,
  klCoef: 0.05,
  aggregation: "weighted",
};

/** Rows of mixed lengths with a response mask on the second half; PPO rows also carry every optional array. */
function rows(rng: Rng, count: number, loss: LossConfig): TrainRow[] {
  return Array.from({ length: count }, () => {
    const length = 6 + Math.floor(rng.nextFloat() * 40);
    const tokenIds = Array.from({ length }, () => Math.floor(rng.nextFloat() * 261));
    const lossMask = tokenIds.map((_, t) => (t >= length / 2 ? 1 : 0));
    const advantages = tokenIds.map(() => (loss.kind === "ppo" ? rng.nextFloat() * 2 - 1 : 0));
    if (loss.kind === "sft") return { tokenIds, lossMask, advantages };
    const near = () => tokenIds.map(() => -5.56 + (rng.nextFloat() - 0.5) * 0.6);
    return {
      tokenIds,
      lossMask,
      advantages,
      oldLogprobs: near(),
      refLogprobs: near(),
      isWeights: tokenIds.map(() => 0.5 + rng.nextFloat()),
      weight: 0.5 + rng.nextFloat(),
    };
  });
}

function model(): Gpt {
  const gpt = new Gpt(config, initialValues(config, 11));
  disposers.push(() => gpt.dispose());
  return gpt;
}

function optimizer(): AdamW {
  const adamw = new AdamW();
  disposers.push(() => adamw.dispose());
  return adamw;
}

function trainer(threads: number): ParallelTrainer {
  const parallel = new ParallelTrainer(threads);
  disposers.push(() => parallel.dispose());
  return parallel;
}

/** Largest absolute difference between the two models' weights. */
function maxWeightDiff(a: Gpt, b: Gpt): number {
  let max = 0;
  for (const [name, variable] of a.byName) {
    const x = variable.dataSync();
    const y = b.byName.get(name)!.dataSync();
    for (let i = 0; i < x.length; i += 1) max = Math.max(max, Math.abs(x[i]! - y[i]!));
  }
  return max;
}

function expectMetricsClose(actual: TrainMetrics, expected: TrainMetrics): void {
  expect(actual.tokens).toBe(expected.tokens);
  expect(actual.nonFiniteSkipped).toBe(expected.nonFiniteSkipped);
  for (const key of ["loss", "gradNorm", "entropy", "clipFraction", "approxKl"] as const)
    expect(actual[key]).toBeCloseTo(expected[key], 5);
}

describe("splitRows", () => {
  const row = (length: number): TrainRow => ({
    tokenIds: new Array(length).fill(1),
    lossMask: new Array(length).fill(1),
    advantages: new Array(length).fill(0),
  });

  it("keeps every row once and balances token counts, longest rows first", () => {
    const input = [10, 40, 12, 30, 25, 8, 33, 20].map(row);
    const shares = splitRows(input, 2);
    expect(shares).toHaveLength(2);
    expect(shares.flat()).toHaveLength(input.length);
    expect(new Set(shares.flat())).toEqual(new Set(input));
    const tokens = shares.map((share) => share.reduce((sum, r) => sum + r.tokenIds.length, 0));
    expect(tokens).toEqual([87, 91]);
    expect(shares[0]![0]!.tokenIds).toHaveLength(40);
  });

  it("makes no empty share: fewer shares than asked when there are fewer rows", () => {
    expect(splitRows([row(5)], 3)).toEqual([[row(5)]]);
    expect(splitRows([row(5), row(6)], 3).map((share) => share.length)).toEqual([1, 1]);
  });
});

describe("ParallelTrainer", () => {
  it("refuses fewer than 2 threads", () => {
    expect(() => new ParallelTrainer(1)).toThrow(RangeError);
    expect(() => new ParallelTrainer(2.5)).toThrow(/integer >= 2/);
    expect(() => new ParallelTrainer(65)).toThrow(/<= 64/);
  });

  for (const [name, loss] of [
    ["SFT", sft],
    ["PPO with KL, dual clip, IS weights and row weights", ppo],
  ] as const) {
    for (const threads of [2, 3]) {
      it(`${name}: ${threads} threads give the one-thread step's weights and metrics within float tolerance`, async () => {
        const serial = model();
        const parallel = model();
        const serialOptimizer = optimizer();
        const parallelOptimizer = optimizer();
        const split = trainer(threads);
        const rng = new Rng(5);
        for (let step = 0; step < 3; step += 1) {
          const batch = rows(rng, 7, loss);
          const expected = trainStep(serial, serialOptimizer, batch, loss, settings);
          const actual = await split.trainStep(parallel, parallelOptimizer, batch, loss, settings);
          expectMetricsClose(actual, expected);
        }
        expect(maxWeightDiff(serial, parallel)).toBeLessThan(1e-5);
        expect(maxWeightDiff(serial, model())).toBeGreaterThan(1e-3);
      }, 60_000);
    }
  }

  it("steps called together run one at a time, in call order (the same weights as awaiting each)", async () => {
    const together = model();
    const oneByOne = model();
    const optimizerA = optimizer();
    const optimizerB = optimizer();
    const splitA = trainer(2);
    const splitB = trainer(2);
    const rng = new Rng(6);
    const batches = [rows(rng, 5, sft), rows(rng, 5, sft), rows(rng, 5, sft)];
    const metrics = await Promise.all(batches.map((b) => splitA.trainStep(together, optimizerA, b, sft, settings)));
    for (const [i, b] of batches.entries())
      expectMetricsClose(metrics[i]!, await splitB.trainStep(oneByOne, optimizerB, b, sft, settings));
    expect(optimizerA.step).toBe(3);
    expect(maxWeightDiff(together, oneByOne)).toBe(0);
  }, 60_000);

  it("leaves no tensor behind on this thread", async () => {
    const gpt = model();
    const adamw = optimizer();
    const split = trainer(2);
    // The same rows every step: the model caches a causal mask per sequence width, which is not a leak.
    const batch = rows(new Rng(8), 6, sft);
    await split.trainStep(gpt, adamw, batch, sft, settings); // creates the moments and the masks
    const before = tf.memory().numTensors;
    for (let step = 0; step < 3; step += 1) await split.trainStep(gpt, adamw, batch, sft, settings);
    expect(tf.memory().numTensors).toBe(before);
  }, 60_000);

  it("a step whose worker thread is gone throws GradientWorkerFailed and changes nothing; the next step starts a new worker", async () => {
    const gpt = model();
    const adamw = optimizer();
    const split = trainer(2);
    const batch = rows(new Rng(9), 6, sft);
    await split.trainStep(gpt, adamw, batch, sft, settings); // starts the worker
    const before = [...gpt.byName].map(([name, v]) => [name, v.dataSync().slice()] as const);
    const step = split.trainStep(gpt, adamw, batch, sft, settings);
    // Runs while the step waits for its worker to be ready, before its share is sent: the thread is terminated.
    queueMicrotask(() => split.dispose());
    await expect(step).rejects.toBeInstanceOf(GradientWorkerFailed);
    for (const [name, values] of before) expect(gpt.byName.get(name)!.dataSync()).toEqual(values);
    expect(adamw.step).toBe(1);
    const metrics = await split.trainStep(gpt, adamw, batch, sft, settings);
    expect(metrics.nonFiniteSkipped).toBeUndefined();
    expect(adamw.step).toBe(2);
  }, 60_000);

  it("checks rows before any thread starts: a malformed row is a RangeError", async () => {
    const split = trainer(2);
    const bad: TrainRow = { tokenIds: [1, 2, 3], lossMask: [1, 1], advantages: [0, 0, 0] };
    await expect(split.trainStep(model(), optimizer(), [bad, bad], sft, settings)).rejects.toThrow(
      /lossMask has 2 values for 3 tokens/,
    );
  });
});

describe("EmbeddedEngine trainThreads", () => {
  it("refuses a trainThreads that is not a positive integer", async () => {
    await expect(EmbeddedEngine.create({ config, trainThreads: 0 })).rejects.toThrow(/trainThreads/);
    await expect(EmbeddedEngine.create({ config, trainThreads: 1.5 })).rejects.toThrow(RangeError);
    await expect(EmbeddedEngine.create({ config, trainThreads: 65 })).rejects.toThrow(/from 1 to 64/);
  });

  it("trains on 2 threads, bumps the policy version, and its checkpoint loads into a one-thread engine", async () => {
    const engine = await EmbeddedEngine.create({ config, seed: 3, trainThreads: 2 });
    disposers.push(() => engine.dispose());
    const rng = new Rng(4);
    const first = await engine.trainStep(rows(rng, 5, sft), sft, settings);
    const second = await engine.trainStep(rows(rng, 5, sft), sft, settings);
    expect(second.loss).toBeLessThan(first.loss * 1.5);
    expect(engine.policyVersion).toBe(2);
    const dir = mkdtempSync(join(tmpdir(), "arclight-parallel-"));
    await engine.saveCheckpoint(dir);
    const loaded = await EmbeddedEngine.load(dir);
    disposers.push(() => loaded.dispose());
    expect(maxWeightDiff(loaded.model, engine.model)).toBe(0);
  }, 60_000);

  it("a process that trains on 2 threads and never disposes the engine still exits by itself", () => {
    const dir = mkdtempSync(join(tmpdir(), "arclight-parallel-exit-"));
    const script = join(dir, "train-once.mts");
    const engineModule = fileURLToPath(new URL("./engine.ts", import.meta.url));
    writeFileSync(
      script,
      [
        `import { EmbeddedEngine } from ${JSON.stringify(engineModule)};`,
        `const engine = await EmbeddedEngine.create({ config: ${JSON.stringify(config)}, trainThreads: 2 });`,
        "const row = { tokenIds: [5, 6, 7, 8], lossMask: [0, 1, 1, 1], advantages: [0, 0, 0, 0] };",
        `const m = await engine.trainStep([row, row, row], ${JSON.stringify(sft)}, ${JSON.stringify(settings)});`,
        'console.log("trained " + m.tokens + " tokens");',
      ].join("\n"),
    );
    const child = spawnSync(process.execPath, ["--import", import.meta.resolve("tsx"), script], {
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(child.stderr).toBe("");
    expect(child.stdout).toBe("trained 9 tokens\n");
    expect(child.status).toBe(0);
  }, 70_000);
});
