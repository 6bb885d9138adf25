/**
 * @module Tests of the non-finite guard in the embedded engine: recorded logprobs of −9999, −∞ and NaN, huge gaps
 * between old and current logprobs, a NaN advantage (step skipped, nothing written), and the optimiser refusing a
 * non-finite weight. Also checks the per-token numbers against `test/fixtures/nonfinite-guard.json`.
 */
import { readFileSync } from "node:fs";
import * as tf from "@tensorflow/tfjs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { LossConfig, OptimizerConfig, TrainRow } from "../engine.js";
import { clampRecordedLogprob, LOG_RATIO_LIMIT, LOGPROB_FLOOR } from "../nonfinite-guard.js";
import { AdamW } from "./adamw.js";
import { initWasmBackend } from "./backend.js";
import { EmbeddedEngine } from "./engine.js";
import { microBatchLoss } from "./loss.js";

beforeAll(() => initWasmBackend());

const tinyConfig = { vocab: 261, d_model: 16, n_layers: 1, n_heads: 2, context: 8 };
const ppo: LossConfig = { kind: "ppo", clipLow: 0.2, clipHigh: 0.28, klCoef: 0, aggregation: "token-mean" };
const adam: OptimizerConfig = { learningRate: 1e-2, weightDecay: 0.01, maxGradNorm: 1, microBatchSize: 2 };

let engines: EmbeddedEngine[] = [];
afterEach(() => {
  for (const engine of engines) engine.dispose();
  engines = [];
});

async function tinyEngine(): Promise<EmbeddedEngine> {
  const engine = await EmbeddedEngine.create({ config: tinyConfig, seed: 11 });
  engines.push(engine);
  return engine;
}

/** Every weight of the engine, flattened in name order. */
function weightsOf(engine: EmbeddedEngine): Float32Array[] {
  return [...engine.model.byName.values()].map((v) => v.dataSync().slice() as Float32Array);
}

function allFinite(arrays: Float32Array[]): boolean {
  return arrays.every((a) => a.every(Number.isFinite));
}

/**
 * Two rows; the first row's last trained token carries `oldLogprob`, every other trained token an old logprob near
 * the initial policy's (≈ log(1/261) = −5.56). Advantages: +1 for row 0, `advantage1` for row 1.
 */
function rowsWithOld(oldLogprob: number, advantage1 = -1): TrainRow[] {
  const tokenIds = [3, 17, 42, 99, 7, 250];
  const lossMask = [0, 0, 0, 1, 1, 1];
  const old = [0, 0, 0, -5.5, -5.6, oldLogprob];
  return [
    { tokenIds, lossMask, advantages: lossMask.map((m) => m), oldLogprobs: old },
    {
      tokenIds: [5, 6, 7, 8, 9],
      lossMask: [0, 0, 1, 1, 1],
      advantages: [0, 0, advantage1, advantage1, advantage1],
      oldLogprobs: [0, 0, -5.5, -5.5, oldLogprob],
    },
  ];
}

describe("non-finite guard: recorded logprobs", () => {
  // vLLM writes −9999 for a token its sampler gave zero probability; exp(logprob + 9999) overflowed to ∞ and the
  // first update turned every weight into NaN.
  for (const [label, value] of [
    ["-9999 (vLLM's -inf)", -9999],
    ["-Infinity", Number.NEGATIVE_INFINITY],
    ["NaN", Number.NaN],
  ] as const) {
    it(`an old logprob of ${label} trains a finite step and leaves every weight finite`, async () => {
      const engine = await tinyEngine();
      const before = weightsOf(engine);
      const metrics = await engine.trainStep(rowsWithOld(value), ppo, adam);
      expect(metrics.nonFiniteSkipped).toBeUndefined();
      expect(Number.isFinite(metrics.loss)).toBe(true);
      expect(Number.isFinite(metrics.gradNorm)).toBe(true);
      expect(Number.isFinite(metrics.approxKl)).toBe(true);
      const after = weightsOf(engine);
      expect(allFinite(after)).toBe(true);
      expect(after.some((w, i) => w.some((x, j) => x !== before[i]![j]))).toBe(true);
      expect(engine.policyVersion).toBe(1);
      const logprobs = await engine.logprobs([[3, 17, 42, 99, 7, 250]]);
      expect(logprobs[0]!.every(Number.isFinite)).toBe(true);
    });
  }

  it("a recorded logprob below the floor trains exactly like one at the floor", async () => {
    const floored = await tinyEngine();
    const deep = await tinyEngine();
    const a = await floored.trainStep(rowsWithOld(LOGPROB_FLOOR), ppo, adam);
    const b = await deep.trainStep(rowsWithOld(-9999), ppo, adam);
    expect(b.loss).toBe(a.loss);
    expect(weightsOf(deep)).toEqual(weightsOf(floored));
  });

  it("huge gaps both ways (old 90 nats below and 5.5 nats above the current logprob) stay finite", async () => {
    const engine = await tinyEngine();
    // Current logprobs are ≈ −5.56 at init: exp(90) overflows float32 (max ≈ e^88.7).
    for (const old of [-5.56 - 90, 0]) {
      const metrics = await engine.trainStep(rowsWithOld(old, -3), ppo, adam);
      expect(metrics.nonFiniteSkipped).toBeUndefined();
      expect(Number.isFinite(metrics.loss) && Number.isFinite(metrics.gradNorm)).toBe(true);
    }
    expect(allFinite(weightsOf(engine))).toBe(true);
  });

  it("NaN at positions outside the loss mask never reaches the loss", async () => {
    const clean = await tinyEngine();
    const dirty = await tinyEngine();
    const rows = rowsWithOld(-5.4);
    const noisy = rows.map((row) => ({
      ...row,
      advantages: row.advantages.map((a, t) => (row.lossMask[t] === 0 ? Number.NaN : a)),
      oldLogprobs: row.oldLogprobs!.map((lp, t) => (row.lossMask[t] === 0 ? Number.NaN : lp)),
    }));
    const a = await clean.trainStep(rows, ppo, adam);
    const b = await dirty.trainStep(noisy, ppo, adam);
    expect(b.loss).toBe(a.loss);
    expect(weightsOf(dirty)).toEqual(weightsOf(clean));
  });
});

describe("non-finite guard: log-space ratios", () => {
  it("a current logprob 100 nats below the old and reference ones keeps the loss and approx KL finite", () => {
    // A policy that has moved far from a token: exp(old − logprob) = e^99.9 overflowed the k3 terms to ∞.
    const loss: LossConfig = { ...ppo, klCoef: 0.1, dualClip: 3 };
    const [value, kl] = tf.tidy(() => {
      const parts = microBatchLoss(
        {
          logprobs: tf.tensor1d([-100, -1]),
          mask: tf.tensor1d([1, 1]),
          weights: tf.tensor1d([1, 1]),
          advantages: tf.tensor1d([-1, 1]),
          oldLogprobs: tf.tensor1d([-0.1, -1]),
          refLogprobs: tf.tensor1d([-0.1, -1]),
          isWeights: null,
        },
        loss,
        2,
      );
      return [parts.loss.dataSync()[0]!, parts.approxKlSum.dataSync()[0]!];
    });
    expect(Number.isFinite(value)).toBe(true);
    expect(Number.isFinite(kl)).toBe(true);
    // k3 at the limit: e^20 − 20 − 1 for the far token, 0 for the on-policy one.
    expect(kl).toBeCloseTo(Math.exp(LOG_RATIO_LIMIT) - LOG_RATIO_LIMIT - 1, -3);
  });
});

describe("non-finite guard: skipped steps", () => {
  it("a NaN advantage skips the step: no weight, optimiser state or version changes, and the next step trains", async () => {
    const engine = await tinyEngine();
    await engine.trainStep(rowsWithOld(-5.5), ppo, adam);
    const before = weightsOf(engine);
    const metrics = await engine.trainStep(rowsWithOld(-5.5, Number.NaN), ppo, adam);
    expect(metrics.nonFiniteSkipped).toBe(true);
    expect(Number.isNaN(metrics.loss)).toBe(true);
    expect(weightsOf(engine)).toEqual(before);
    expect(engine.policyVersion).toBe(1);
    const next = await engine.trainStep(rowsWithOld(-5.5), ppo, adam);
    expect(next.nonFiniteSkipped).toBeUndefined();
    expect(engine.policyVersion).toBe(2);
    expect(allFinite(weightsOf(engine))).toBe(true);
  });

  it("AdamW refuses an update that would write a non-finite weight and keeps its step counter", () => {
    const weight = tf.variable(tf.tensor1d([1, 2, 3]));
    const optimizer = new AdamW();
    const grads = new Map<string, tf.Tensor>([["w", tf.tensor1d([0.1, Number.POSITIVE_INFINITY, 0.1])]]);
    try {
      const applied = optimizer.apply([{ name: "w", variable: weight, decay: true }], grads, 0.1, 0.01);
      expect(applied).toBe(false);
      expect([...weight.dataSync()]).toEqual([1, 2, 3]);
      expect(optimizer.step).toBe(0);
      expect([...optimizer.m.get("w")!.dataSync()]).toEqual([0, 0, 0]);
    } finally {
      tf.dispose([weight, ...grads.values()]);
      optimizer.dispose();
    }
  });
});

/** The guard's per-token numbers, as `test/fixtures/nonfinite-guard.json` states them for every engine. */
interface GuardFixture {
  logprob_floor: number;
  log_ratio_limit: number;
  clamp_recorded_logprob: { recorded: number | string; clamped: number }[];
  ppo_token_loss: {
    clip_low: number;
    clip_high: number;
    cases: { what: string; logprob: number; old_logprob: number | string; advantage: number; loss: number }[];
  };
}

function decode(value: number | string): number {
  return typeof value === "number" ? value : Number(value);
}

describe("non-finite guard: shared fixture", () => {
  const fixture = JSON.parse(
    readFileSync(new URL("../../../test/fixtures/nonfinite-guard.json", import.meta.url), "utf8"),
  ) as GuardFixture;

  it("the floor and log-ratio limit match the fixture", () => {
    expect([fixture.logprob_floor, fixture.log_ratio_limit]).toEqual([LOGPROB_FLOOR, LOG_RATIO_LIMIT]);
  });

  it("clampRecordedLogprob matches every fixture case", () => {
    for (const { recorded, clamped } of fixture.clamp_recorded_logprob)
      expect(clampRecordedLogprob(decode(recorded))).toBe(clamped);
  });

  it("the embedded PPO loss of each fixture token matches within float32 precision", () => {
    const { clip_low, clip_high, cases } = fixture.ppo_token_loss;
    const loss: LossConfig = {
      kind: "ppo",
      clipLow: clip_low,
      clipHigh: clip_high,
      klCoef: 0,
      aggregation: "token-mean",
    };
    for (const c of cases) {
      const value = tf.tidy(() => {
        const parts = microBatchLoss(
          {
            logprobs: tf.tensor1d([c.logprob]),
            mask: tf.tensor1d([1]),
            weights: tf.tensor1d([1]),
            advantages: tf.tensor1d([c.advantage]),
            oldLogprobs: tf.tensor1d([clampRecordedLogprob(decode(c.old_logprob))]),
            refLogprobs: null,
            isWeights: null,
          },
          loss,
          1,
        );
        return parts.loss.dataSync()[0]!;
      });
      expect(Math.abs(value - c.loss), c.what).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(c.loss)));
    }
  });
});
