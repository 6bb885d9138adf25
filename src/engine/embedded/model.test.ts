/** @module Tests of the GPT's forward passes: the inference path's numbers and its memory. */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { initWasmBackend } from "./backend.js";
import type { ModelConfig } from "./config.js";
import { BatchKvCache } from "./kv-cache.js";
import { Gpt } from "./model.js";
import { initialValues } from "./params.js";

const config = (layers: number): ModelConfig => ({ vocab: 40, d_model: 32, n_layers: layers, n_heads: 4, context: 64 });
const ids = (rows: number, width: number): tf.Tensor2D =>
  tf.tensor2d(
    Array.from({ length: rows * width }, (_, i) => (i * 7) % 40),
    [rows, width],
    "int32",
  );

describe("Gpt.forward", () => {
  beforeAll(() => initWasmBackend());

  it("the inference path gives the training path's logits and keys/values", () => {
    const model = new Gpt(config(3), initialValues(config(3), 5));
    const input = ids(4, 20);
    tf.tidy(() => {
      const inference = model.forward(input, { inference: true, returnKv: true });
      const training = model.forward(input, { returnKv: true });
      const diff = (a: tf.Tensor, b: tf.Tensor): number => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]!;
      expect(diff(inference.logits, training.logits)).toBeLessThan(1e-5);
      expect(inference.kv.map((l) => l.k.shape)).toEqual([
        [4, 4, 20, 8],
        [4, 4, 20, 8],
        [4, 4, 20, 8],
      ]);
      inference.kv.forEach((layer, l) => {
        expect(diff(layer.v, training.kv[l]!.v)).toBeLessThan(1e-5);
      });
    });
    model.dispose();
  });

  it("inference frees each layer's intermediates: peak memory does not grow with depth", async () => {
    // Without the per-layer scope every layer's [B, H, T, T] scores stay alive until the caller's tidy ends.
    const peak = async (layers: number): Promise<number> => {
      const model = new Gpt(config(layers), initialValues(config(layers), 1));
      const input = ids(8, 64);
      const { peakBytes } = await tf.profile(() => tf.tidy(() => model.forward(input, { inference: true }).logits));
      model.dispose();
      input.dispose();
      return peakBytes;
    };
    const one = await peak(1);
    expect(await peak(6)).toBeLessThan(1.3 * one);
  });

  it("inference leaves only its outputs behind", () => {
    const model = new Gpt(config(2), initialValues(config(2), 2));
    const input = ids(2, 10);
    model.forward(input, { inference: true }).logits.dispose(); // caches the causal mask
    const before = tf.memory().numTensors;
    const out = tf.tidy(() => model.forward(input, { inference: true, returnKv: true }));
    expect(tf.memory().numTensors).toBe(before + 1 + 2 * 2); // logits + k and v of 2 layers
    tf.dispose([out.logits, ...out.kv.flatMap((l) => [l.k, l.v])]);
    model.dispose();
  });
});

describe("Gpt.decodeStep over the batch KV cache", () => {
  beforeAll(() => initWasmBackend());

  for (const shape of [
    { d_model: 32, n_heads: 4 },
    { d_model: 24, n_heads: 4 },
  ]) {
    it(`gives the full pass's next-token logits while rows join, leave and the cache grows (head size ${shape.d_model / shape.n_heads})`, () => {
      const cfg: ModelConfig = { vocab: 40, n_layers: 2, context: 64, ...shape };
      // Weights 25× their initial scale: peaked attention and logits far apart, so a wrong column or scale shows.
      const values = new Map([...initialValues(cfg, 9)].map(([name, w]) => [name, w.map((x) => x * 25)]));
      const model = new Gpt(cfg, values);
      const cache = new BatchKvCache();
      const rows: number[][] = [];
      /** Logits of the last position of each row by a full forward pass, [rows, V]. */
      const reference = (): number[][] =>
        rows.map((ids) =>
          tf.tidy(() => {
            const { logits } = model.forward(tf.tensor2d(ids, [1, ids.length], "int32"), { inference: true });
            return Array.from(logits.dataSync().slice((ids.length - 1) * cfg.vocab));
          }),
        );
      const join = (prompts: number[][]): void => {
        const width = Math.max(...prompts.map((p) => p.length));
        const ids = prompts.flatMap((p) => [...p, ...new Array(width - p.length).fill(0)]);
        const { kv } = model.forward(tf.tensor2d(ids, [prompts.length, width], "int32"), {
          inference: true,
          returnKv: true,
        });
        cache.addRows(
          kv,
          prompts.map((p) => p.length),
        );
        rows.push(...prompts.map((p) => [...p]));
      };
      const step = (): void => {
        // Each row appends a token chosen from its length, then one decode step must match a full pass over it.
        for (const ids of rows) ids.push((ids.length * 11 + ids[0]!) % cfg.vocab);
        cache.reserveColumn();
        const logits = model.decodeStep(
          Int32Array.from(rows, (ids) => ids.at(-1)!),
          Int32Array.from(rows, (ids) => ids.length - 1),
          cache.kv,
          cache.filled,
          cache.stepBias(),
        );
        cache.advance();
        const got = rows.map((_, b) => logits.subarray(b * cfg.vocab, (b + 1) * cfg.vocab));
        reference().forEach((expected, b) => {
          expect(
            Math.max(...expected.map((v, i) => Math.abs(v - got[b]![i]!) / Math.max(1, Math.abs(v)))),
          ).toBeLessThan(1e-3);
        });
      };
      join([
        [1, 2, 3, 4, 5],
        [6, 7, 8],
      ]);
      for (let i = 0; i < 3; i++) step();
      join([[9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]]); // wider than the running rows' columns
      for (let i = 0; i < 3; i++) step();
      cache.keepRows([0, 2]);
      rows.splice(1, 1);
      for (let i = 0; i < 20; i++) step(); // past the free room: the cache grows
      join([[20]]);
      step();
      join(Array.from({ length: 7 }, (_, i) => [i + 1, 2 * i + 3])); // 10 rows: the step's buffers grow past 8
      step();
      step();
      expect(() =>
        model.decodeStep(new Int32Array(2), new Int32Array(2), cache.kv, cache.filled, new Float32Array(1)),
      ).toThrow(/disagree/);
      cache.clear();
      model.dispose();
    });
  }

  it("reads weights assigned between steps (the matrix products' packed weights are packed again)", () => {
    const cfg = config(2);
    const model = new Gpt(cfg, initialValues(cfg, 3));
    const prompt = [1, 2, 3, 4, 5];
    const lastLogits = (): number[] =>
      tf.tidy(() => {
        const { logits } = model.forward(tf.tensor2d(prompt, [1, prompt.length], "int32"), { inference: true });
        return Array.from(logits.dataSync().slice((prompt.length - 1) * cfg.vocab));
      });
    const decoded = (): number[] => {
      const cache = new BatchKvCache();
      const { kv } = model.forward(tf.tensor2d(prompt.slice(0, -1), [1, prompt.length - 1], "int32"), {
        inference: true,
        returnKv: true,
      });
      cache.addRows(kv, [prompt.length - 1]);
      cache.reserveColumn();
      const logits = model.decodeStep(
        Int32Array.of(prompt.at(-1)!),
        Int32Array.of(prompt.length - 1),
        cache.kv,
        cache.filled,
        cache.stepBias(),
      );
      cache.clear();
      return Array.from(logits);
    };
    const before = decoded();
    const maxDiff = (a: number[], b: number[]): number => Math.max(...a.map((v, i) => Math.abs(v - b[i]!)));
    expect(maxDiff(before, lastLogits())).toBeLessThan(1e-4);
    // new values for every weight, as a trained policy arriving from a worker would bring
    model.assignWeights([...initialValues(cfg, 4)].map(([name, w]) => [name, w.map((x) => x * 3)] as const));
    const after = decoded();
    expect(maxDiff(after, before)).toBeGreaterThan(1e-2);
    expect(maxDiff(after, lastLogits())).toBeLessThan(1e-4);
    model.dispose();
  });
});
