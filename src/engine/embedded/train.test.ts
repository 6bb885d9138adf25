import * as tf from "@tensorflow/tfjs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { LossConfig, TrainRow } from "../engine.js";
import { initWasmBackend } from "./backend.js";
import { EmbeddedEngine } from "./engine.js";
import { Gpt } from "./model.js";
import { initialValues } from "./params.js";
import { Rng } from "./rng.js";
import { batchObjective } from "./train.js";
import { lossDenominator, packBatch } from "./train-batch.js";

beforeAll(() => initWasmBackend());

let disposers: (() => void)[] = [];
afterEach(() => {
  for (const d of disposers) d();
  disposers = [];
});

const tinyConfig = { vocab: 261, d_model: 16, n_layers: 1, n_heads: 2, context: 8 };

/** Rows with random tokens, a response mask on the last half, and random advantages / logprob offsets. */
function randomRows(rng: Rng, count: number, length: number): TrainRow[] {
  return Array.from({ length: count }, () => {
    const tokenIds = Array.from({ length }, () => Math.floor(rng.nextFloat() * 261));
    const lossMask = tokenIds.map((_, t) => (t >= length / 2 ? 1 : 0));
    const advantages = tokenIds.map(() => rng.nextFloat() * 2 - 1);
    return { tokenIds, lossMask, advantages, weight: 0.5 + rng.nextFloat() };
  });
}

describe("gradients", () => {
  it("the PPO+KL loss gradient matches central finite differences on a tiny model", () => {
    const model = new Gpt(tinyConfig, initialValues(tinyConfig, 7));
    disposers.push(() => model.dispose());
    const rng = new Rng(3);
    const rows = randomRows(rng, 3, 8);
    const loss: LossConfig = {
      kind: "ppo",
      clipLow: 0.2,
      clipHigh: 0.28,
      dualClip: 3,
      klCoef: 0.1,
      aggregation: "weighted",
    };
    // Old/ref logprobs near the current ones (≈ log(1/261) at init) so some ratios clip and some do not.
    const current = rows.map((row) => row.tokenIds.map(() => -5.56));
    for (const [i, row] of rows.entries()) {
      row.oldLogprobs = current[i]!.map((lp) => lp + (rng.nextFloat() - 0.5) * 0.6);
      row.refLogprobs = current[i]!.map((lp) => lp + (rng.nextFloat() - 0.5) * 0.4);
      row.isWeights = current[i]!.map(() => 0.5 + rng.nextFloat());
    }
    const batch = packBatch(rows, loss);
    const denominator = lossDenominator(rows, loss);
    const lossValue = (): number => tf.tidy(() => batchObjective(model, batch, loss, denominator).loss.dataSync()[0]!);
    const names = ["wte", "h.0.attn.c_attn.weight", "h.0.mlp.c_fc.weight", "ln_f.bias", "lm_head.weight"];
    const variables = names.map((n) => model.byName.get(n)!);
    const { value, grads } = tf.variableGrads(() => batchObjective(model, batch, loss, denominator).loss, variables);
    value.dispose();
    const eps = 1e-2;
    for (const variable of variables) {
      const g = grads[variable.name]!.dataSync() as Float32Array;
      // The three entries with the largest gradient: well above float32 finite-difference noise.
      const top = [...g.keys()].sort((a, b) => Math.abs(g[b]!) - Math.abs(g[a]!)).slice(0, 3);
      const original = variable.dataSync().slice() as Float32Array;
      for (const i of top) {
        const probe = (delta: number): number => {
          const values = original.slice();
          values[i] = original[i]! + delta;
          variable.assign(tf.tensor(values, variable.shape));
          return lossValue();
        };
        const numeric = (probe(eps) - probe(-eps)) / (2 * eps);
        variable.assign(tf.tensor(original, variable.shape));
        expect(Math.abs(numeric - g[i]!)).toBeLessThan(2e-2 * Math.abs(g[i]!) + 1e-4);
      }
    }
    tf.dispose(Object.values(grads));
  });
});

describe("EmbeddedEngine.trainStep", () => {
  const make = async (seed = 1): Promise<EmbeddedEngine> => {
    const engine = await EmbeddedEngine.create({ config: { ...tinyConfig, d_model: 32, context: 16 }, seed });
    disposers.push(() => engine.dispose());
    return engine;
  };
  const ppo: LossConfig = { kind: "ppo", clipLow: 0.2, clipHigh: 0.2, klCoef: 0, aggregation: "token-mean" };
  const adam = { learningRate: 1e-2, weightDecay: 0.1, maxGradNorm: 1, microBatchSize: 8 };

  it("gradient accumulation over micro-batches gives the same update as one batch", async () => {
    const rows = randomRows(new Rng(5), 6, 10);
    const whole = await make();
    const split = await make();
    await whole.trainStep(rows, ppo, adam);
    await split.trainStep(rows, ppo, { ...adam, microBatchSize: 1 });
    const a = (await whole.logprobs(rows.map((r) => r.tokenIds))).flat();
    const b = (await split.logprobs(rows.map((r) => r.tokenIds))).flat();
    a.forEach((x, i) => {
      expect(Math.abs(x - b[i]!)).toBeLessThan(1e-4);
    });
    expect(whole.policyVersion).toBe(1);
  });

  it("raises the logprob of tokens with positive advantage and lowers it for negative ones", async () => {
    const engine = await make();
    const good = [1, 2, 3, 4, 5, 6];
    const bad = [1, 2, 3, 9, 9, 9];
    const row = (tokenIds: number[], advantage: number): TrainRow => ({
      tokenIds,
      lossMask: [0, 0, 0, 1, 1, 1],
      advantages: tokenIds.map(() => advantage),
    });
    const before = await engine.logprobs([good, bad]);
    const metrics = await engine.trainStep([row(good, 1), row(bad, -1)], ppo, adam);
    const after = await engine.logprobs([good, bad]);
    const sum = (lp: number[]) => lp.slice(3).reduce((a, b) => a + b, 0);
    expect(sum(after[0]!)).toBeGreaterThan(sum(before[0]!));
    expect(sum(after[1]!)).toBeLessThan(sum(before[1]!));
    expect(metrics.tokens).toBe(6);
    expect(metrics.entropy).toBeGreaterThan(0);
  });

  it("rejects malformed rows with a message naming the row and field", async () => {
    const engine = await make();
    const row: TrainRow = { tokenIds: [1, 2, 3], lossMask: [0, 1], advantages: [0, 1, 1] };
    await expect(engine.trainStep([row], ppo, adam)).rejects.toThrow(/row 0: lossMask has 2 values for 3 tokens/);
    const noRef: TrainRow = { tokenIds: [1, 2, 3], lossMask: [0, 1, 1], advantages: [0, 1, 1] };
    await expect(engine.trainStep([noRef], { ...ppo, klCoef: 0.1 }, adam)).rejects.toThrow(/refLogprobs/);
    const unmasked: TrainRow = { tokenIds: [1, 2, 3], lossMask: [1, 0, 0], advantages: [0, 0, 0] };
    await expect(engine.trainStep([unmasked], ppo, adam)).rejects.toThrow(/no masked token/);
    expect(engine.policyVersion).toBe(0);
  });
});

describe("learning", () => {
  it("a tiny model learns to reverse 3-5 letter strings to >= 95% exact match by SFT", async () => {
    const engine = await EmbeddedEngine.create({
      config: { vocab: 261, d_model: 64, n_layers: 2, n_heads: 2, context: 16 },
      seed: 1,
    });
    disposers.push(() => engine.dispose());
    const rng = new Rng(5);
    const tok = engine.tokenizer;
    const word = (): string => {
      const n = 3 + Math.floor(rng.nextFloat() * 3);
      return Array.from({ length: n }, () => "abcdefgh"[Math.floor(rng.nextFloat() * 8)]).join("");
    };
    const reverse = (s: string): string => [...s].reverse().join("");
    const example = (s: string): TrainRow => {
      const prompt = tok.encode(`${s}=`);
      const tokenIds = [...prompt, ...tok.encode(reverse(s)), tok.eosId];
      return {
        tokenIds,
        lossMask: tokenIds.map((_, i) => (i >= prompt.length ? 1 : 0)),
        advantages: tokenIds.map(() => 0),
      };
    };
    const sft: LossConfig = { kind: "sft", aggregation: "token-mean" };
    for (let step = 0; step < 200; step++) {
      const rows = Array.from({ length: 32 }, () => example(word()));
      await engine.trainStep(rows, sft, { learningRate: 3e-3, weightDecay: 0, maxGradNorm: 1, microBatchSize: 32 });
    }
    const tests = Array.from({ length: 100 }, word);
    const greedy = { temperature: 0, topP: 1, topK: 0, maxTokens: 8, stopTokenIds: [], stop: [] };
    const results = await engine.generate(
      tests.map((s) => ({ promptTokenIds: tok.encode(`${s}=`), sampling: greedy })),
    );
    const correct = results.filter(
      (r, i) => r.finishReason === "stop" && tok.decode(r.tokenIds) === reverse(tests[i]!),
    );
    expect(correct.length).toBeGreaterThanOrEqual(95);
  }, 180_000);
});
