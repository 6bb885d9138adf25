/** @module Tests of the forward-only layer-norm kernel: it matches the differentiable tfjs layer norm. */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { initWasmBackend } from "./backend.js";
import { layerNorm } from "./ops.js";
import { layerNormInference } from "./wasm-layer-norm.js";

describe("layer-norm kernel", () => {
  beforeAll(() => initWasmBackend());

  it("matches the tfjs-op layer norm to float32 rounding, offset and scaled rows included", () => {
    const x = tf.tidy(() =>
      tf.add(tf.mul(tf.randomNormal([9, 16], 0, 1, "float32", 1), tf.linspace(0.01, 50, 16)), 7),
    ) as tf.Tensor2D; // columns of very different scale, all rows offset by 7
    const gain = tf.randomNormal([16], 1, 0.2, "float32", 2);
    const bias = tf.randomNormal([16], 0, 0.2, "float32", 3);
    const got = layerNormInference(x, gain, bias);
    const expected = layerNorm(x, gain, bias).dataSync();
    expect(got.shape).toEqual([9, 16]);
    got.dataSync().forEach((v, i) => {
      expect(v).toBeCloseTo(expected[i]!, 5);
    });
  });

  it("matches it at a width that is not a multiple of 4 (the kernel's one-at-a-time remainder)", () => {
    const x = tf.randomNormal([5, 7], 3, 2, "float32", 4) as tf.Tensor2D;
    const gain = tf.randomNormal([7], 1, 0.2, "float32", 5);
    const bias = tf.randomNormal([7], 0, 0.2, "float32", 6);
    const expected = layerNorm(x, gain, bias).dataSync();
    layerNormInference(x, gain, bias)
      .dataSync()
      .forEach((v, i) => {
        expect(v).toBeCloseTo(expected[i]!, 5);
      });
  });

  it("a constant row normalises to the bias (variance 0, ε keeps it finite)", () => {
    const x = tf.fill([2, 4], 3) as tf.Tensor2D;
    const bias = tf.tensor1d([0.5, -1, 2, 0]);
    const got = layerNormInference(x, tf.ones([4]), bias).dataSync();
    expect(Array.from(got)).toEqual([0.5, -1, 2, 0, 0.5, -1, 2, 0]);
  });
});
