/** @module Tests of the model's building blocks: GELU's sigmoid form is the tanh approximation, value and slope. */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { initWasmBackend } from "./backend.js";
import { gelu } from "./ops.js";

/** 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) in float64. */
function geluTanh(x: number): number {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
}

const xs = [-6, -3, -1.5, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 2.5, 4, 8];

describe("gelu", () => {
  beforeAll(() => initWasmBackend());

  it("equals the tanh approximation to float32 precision", () => {
    const got = gelu(tf.tensor1d(xs)).dataSync();
    xs.forEach((x, i) => {
      expect(got[i]).toBeCloseTo(geluTanh(x), 6);
    });
  });

  it("has the slope of the tanh approximation (central finite differences)", () => {
    const slope = tf
      .grad((x: tf.Tensor) => tf.sum(gelu(x)))(tf.tensor1d(xs))
      .dataSync();
    const h = 1e-4;
    xs.forEach((x, i) => {
      expect(slope[i]).toBeCloseTo((geluTanh(x + h) - geluTanh(x - h)) / (2 * h), 4);
    });
  });
});
