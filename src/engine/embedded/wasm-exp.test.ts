/**
 * @module Tests of the SIMD `Exp` kernel: e^x within float32 rounding of float64's over the whole finite range, for
 * sizes with every remainder mod 4; +∞, 0 and NaN at the edges; int32 inputs still answered; nothing leaked.
 */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { initWasmBackend } from "./backend.js";

describe("SIMD Exp kernel", () => {
  beforeAll(() => initWasmBackend());

  it("e^x is within 3e-7 relative of float64's from -86 to 88.7, at sizes with every remainder mod 4", () => {
    for (const size of [1, 2, 3, 4, 5, 1017, 4000]) {
      const values = Float32Array.from({ length: size }, (_, i) => -86 + (174.7 * i) / Math.max(1, size - 1));
      const before = tf.memory().numTensors;
      const x = tf.tensor1d(values);
      const y = tf.exp(x);
      const out = y.dataSync();
      let worst = 0;
      values.forEach((v, i) => {
        worst = Math.max(worst, Math.abs(out[i]! - Math.exp(v)) / Math.exp(v));
      });
      expect(worst).toBeLessThan(3e-7);
      tf.dispose([x, y]);
      expect(tf.memory().numTensors).toBe(before);
    }
  });

  it("stays within 2e-38 of e^x between -100 and -86, where floats turn subnormal", () => {
    const values = Float32Array.from({ length: 57 }, (_, i) => -100 + i / 4);
    const out = tf.exp(tf.tensor1d(values)).dataSync();
    values.forEach((v, i) => {
      expect(Math.abs(out[i]! - Math.exp(v))).toBeLessThan(2e-38);
    });
  });

  it("gives +Infinity above ln(FLT_MAX), 0 far below, NaN for NaN, exactly 1 at 0", () => {
    const y = tf.exp(tf.tensor1d([89, 1000, Number.POSITIVE_INFINITY, -1000, Number.NEGATIVE_INFINITY, Number.NaN, 0]));
    const out = [...y.dataSync()];
    expect(out.slice(0, 3)).toEqual([Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY]);
    expect(out.slice(3, 5)).toEqual([0, 0]);
    expect(out[5]).toBeNaN();
    expect(out[6]).toBe(1);
  });

  it("answers an int32 input through the stock kernel (a float32 result)", () => {
    const y = tf.exp(tf.tensor1d([0, 1, 2], "int32"));
    expect(y.dtype).toBe("float32");
    const out = y.dataSync();
    [1, Math.E, Math.E ** 2].forEach((e, i) => {
      expect(Math.abs(out[i]! - e) / e).toBeLessThan(3e-7);
    });
  });

  it("log-softmax over a [1016, 261] row block sums to 1 in probability and keeps its gradient", () => {
    const logits = tf.randomNormal([1016, 261], 0, 3, "float32", 9);
    const probs = tf.exp(tf.logSoftmax(logits));
    const rowSums = tf.sum(probs, -1).dataSync();
    for (const s of rowSums) expect(Math.abs(s - 1)).toBeLessThan(1e-5);
    const dy = tf.randomNormal([1016, 261], 0, 1, "float32", 10);
    const grad = tf.grad((t: tf.Tensor) => tf.sum(tf.mul(tf.logSoftmax(t as tf.Tensor2D), dy)))(logits);
    // d/dz Σ dy·logsoftmax(z) = dy − softmax(z)·Σ dy, row by row.
    const expected = tf.sub(dy, tf.mul(tf.softmax(logits), tf.sum(dy, -1, true)));
    const [g, e] = [grad.dataSync(), expected.dataSync()];
    let worst = 0;
    for (let i = 0; i < e.length; i++) worst = Math.max(worst, Math.abs(g[i]! - e[i]!));
    expect(worst).toBeLessThan(1e-4);
  });
});
