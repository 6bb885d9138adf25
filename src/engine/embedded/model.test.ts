/** @module Tests of the GPT's forward passes: the inference path's numbers and its memory. */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { initWasmBackend } from "./backend.js";
import type { ModelConfig } from "./config.js";
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
