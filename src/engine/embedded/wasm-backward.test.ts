/**
 * @module Tests of the backward-pass kernels: column sums equal `tf.sum(x, 0)` for every width remainder and row
 * count, GELU's gradient equals the tfjs-op gradient of the reference GELU, inputs the kernel does not take get
 * `undefined`, and neither leaves a tensor behind.
 */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { relativeError } from "../../testing/relative-error.js";
import { initWasmBackend } from "./backend.js";
import { GELU_CUBE, GELU_LINEAR, gelu } from "./ops.js";
import { columnSum, geluGrad } from "./wasm-backward.js";
import { geluFused } from "./wasm-fused.js";

/** σ(2u) of x, as `geluFused`'s forward pass computes it. */
const sigmoid2u = (x: tf.Tensor): tf.Tensor =>
  tf.tidy(() => tf.sigmoid(tf.mul(x, tf.add(tf.mul(tf.mul(x, x), GELU_CUBE), GELU_LINEAR))));

describe("backward-pass kernels", () => {
  beforeAll(() => initWasmBackend());

  it("column sums equal tf.sum over axis 0 for widths with every remainder mod 4, one row and many", () => {
    for (const [rows, width] of [
      [1, 1],
      [1, 7],
      [5, 3],
      [37, 4],
      [1016, 128],
      [1016, 130],
      [300, 261],
    ] as const) {
      const before = tf.memory().numTensors;
      const x = tf.randomNormal([rows, width], 2, 3, "float32", rows + width) as tf.Tensor2D;
      const sums = columnSum(x);
      const reference = tf.sum(x, 0);
      expect(sums.shape).toEqual([width]);
      expect(relativeError(sums.dataSync(), reference.dataSync())).toBeLessThan(2e-6);
      tf.dispose([x, sums, reference]);
      expect(tf.memory().numTensors).toBe(before);
    }
  });

  it("column sums overwrite whatever the output buffer held before (the heap reuses freed memory)", () => {
    const ones = tf.ones([64, 32]) as tf.Tensor2D;
    for (let i = 0; i < 3; i++) {
      const sums = columnSum(ones);
      expect([...sums.dataSync()]).toEqual(Array(32).fill(64));
      sums.dispose();
    }
    ones.dispose();
  });

  it("GELU's gradient equals the tfjs-op gradient of the reference GELU, including saturated inputs", () => {
    const values = Array.from({ length: 4 * 100 }, (_, i) => (i - 200) / 8); // -25 .. 24.875
    const x = tf.tensor2d(values, [4, 100]);
    const dy = tf.randomNormal([4, 100], 0, 1, "float32", 7);
    const s = sigmoid2u(x);
    const before = tf.memory().numTensors;
    const kernel = geluGrad(x, s, dy)!;
    const reference = tf.grad((t: tf.Tensor) => tf.sum(tf.mul(gelu(t), dy)))(x);
    expect(relativeError(kernel.dataSync(), reference.dataSync())).toBeLessThan(1e-5);
    tf.dispose([kernel, reference]);
    expect(tf.memory().numTensors).toBe(before);
  });

  it("GELU's gradient kernel declines a size that is not a multiple of 4 or shapes that differ, and fused GELU still matches", () => {
    const x = tf.linspace(-6, 6, 63);
    expect(geluGrad(x, sigmoid2u(x), tf.onesLike(x))).toBeUndefined();
    expect(geluGrad(tf.zeros([8]), tf.zeros([8]), tf.zeros([2, 4]))).toBeUndefined();
    expect(geluGrad(tf.zeros([8]), tf.zeros([8], "int32"), tf.zeros([8]))).toBeUndefined();
    const dy = tf.randomNormal([63], 0, 1, "float32", 8);
    const fused = tf.grad((t: tf.Tensor) => tf.sum(tf.mul(geluFused(t), dy)))(x);
    const reference = tf.grad((t: tf.Tensor) => tf.sum(tf.mul(gelu(t), dy)))(x);
    expect(relativeError(geluFused(x).dataSync(), gelu(x).dataSync())).toBeLessThan(1e-6);
    expect(relativeError(fused.dataSync(), reference.dataSync())).toBeLessThan(1e-5);
  });
});
