/**
 * @module Tests of the fused training ops: GELU, `x @ w + b` and layer norm match the tfjs-op reference forward and backward
 * (and GELU's gradient matches a float64 finite difference), free every intermediate, and the GPT trained through
 * them gives the reference path's logits and gradients.
 */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { relativeError } from "../../testing/relative-error.js";
import { initWasmBackend } from "./backend.js";
import type { ModelConfig } from "./config.js";
import { Gpt } from "./model.js";
import { gelu, layerNorm, linear } from "./ops.js";
import { paramSpecs } from "./params.js";
import { Rng } from "./rng.js";
import { embedFused, geluFused, layerNormFused, linearBias } from "./wasm-fused.js";

/** GELU in float64: x·σ(2u), u = √(2/π)·(x + 0.044715·x³). */
const gelu64 = (x: number): number => x / (1 + Math.exp(-2 * Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

describe("fused training ops", () => {
  beforeAll(() => initWasmBackend());

  it("GELU forward equals the six-op reference, from large negative to large positive inputs", () => {
    const x = tf.tensor2d(
      Array.from({ length: 3 * 40 }, (_, i) => (i - 60) / 4),
      [3, 40],
    ); // -15 .. 14.75
    expect(relativeError(geluFused(x).dataSync(), gelu(x).dataSync())).toBeLessThan(1e-6);
  });

  it("GELU gradient equals the reference's autodiff gradient and a float64 central difference", () => {
    const values = Array.from({ length: 64 }, (_, i) => (i - 32) / 6);
    const x = tf.tensor1d(values);
    const dy = tf.randomNormal([64], 0, 1, "float32", 5); // an upstream gradient that is not all ones
    const fused = tf
      .grad((t: tf.Tensor) => tf.sum(tf.mul(geluFused(t), dy)))(x)
      .dataSync();
    const reference = tf
      .grad((t: tf.Tensor) => tf.sum(tf.mul(gelu(t), dy)))(x)
      .dataSync();
    expect(relativeError(fused, reference)).toBeLessThan(1e-5);
    const up = dy.dataSync();
    const h = 1e-5;
    const numeric = values.map((v, i) => (up[i]! * (gelu64(v + h) - gelu64(v - h))) / (2 * h));
    expect(relativeError(fused, numeric)).toBeLessThan(1e-5);
  });

  it("x @ w + b forward and all three gradients equal linear-then-add", () => {
    const x = tf.randomNormal([37, 24], 0, 1, "float32", 1) as tf.Tensor2D; // rows not a multiple of 4 or 8
    const w = tf.randomNormal([24, 40], 0, 1, "float32", 2) as tf.Tensor2D;
    const b = tf.randomNormal([40], 0, 1, "float32", 3) as tf.Tensor1D;
    const dy = tf.randomNormal([37, 40], 0, 1, "float32", 4);
    const loss =
      (f: (x: tf.Tensor, w: tf.Tensor, b: tf.Tensor) => tf.Tensor) => (xs: tf.Tensor, ws: tf.Tensor, bs: tf.Tensor) =>
        tf.sum(tf.mul(f(xs, ws, bs), dy));
    const fused = tf.grads(loss(linearBias))([x, w, b]);
    const reference = tf.grads(loss((xs, ws, bs) => tf.add(linear(xs, ws), bs)))([x, w, b]);
    expect(relativeError(linearBias(x, w, b).dataSync(), tf.add(linear(x, w), b).dataSync())).toBeLessThan(1e-6);
    expect(fused.map((g) => g.shape)).toEqual([[37, 24], [24, 40], [40]]);
    fused.forEach((g, i) => {
      expect(relativeError(g.dataSync(), reference[i]!.dataSync())).toBeLessThan(1e-5);
    });
  });

  it("layer norm forward and all three gradients equal the nine-op reference", () => {
    // Rows with an offset and a spread that differ, one nearly constant (σ close to √ε), width not a multiple of 4.
    const x = tf.tidy(() =>
      tf.add(
        tf.mul(tf.randomNormal([37, 22], 0, 1, "float32", 6), tf.linspace(0.001, 5, 37).reshape([37, 1])),
        tf.linspace(-20, 20, 37).reshape([37, 1]),
      ),
    ) as tf.Tensor2D;
    const gain = tf.randomNormal([22], 1, 0.5, "float32", 7) as tf.Tensor1D;
    const bias = tf.randomNormal([22], 0, 1, "float32", 8) as tf.Tensor1D;
    const dy = tf.randomNormal([37, 22], 0, 1, "float32", 9);
    const loss =
      (f: (x: tf.Tensor2D, g: tf.Tensor, b: tf.Tensor) => tf.Tensor) => (xs: tf.Tensor, gs: tf.Tensor, bs: tf.Tensor) =>
        tf.sum(tf.mul(f(xs as tf.Tensor2D, gs, bs), dy));
    expect(relativeError(layerNormFused(x, gain, bias).dataSync(), layerNorm(x, gain, bias).dataSync())).toBeLessThan(
      1e-6,
    );
    const fused = tf.grads(loss(layerNormFused))([x, gain, bias]);
    const reference = tf.grads(loss(layerNorm))([x, gain, bias]);
    expect(fused.map((g) => g.shape)).toEqual([[37, 22], [22], [22]]);
    fused.forEach((g, i) => {
      expect(relativeError(g.dataSync(), reference[i]!.dataSync())).toBeLessThan(1e-4);
    });
  });

  it("a forward and backward pass through the fused ops leaves no tensor behind", () => {
    const x = tf.randomNormal([16, 8]);
    const w = tf.randomNormal([8, 12]);
    const b = tf.zeros([12]);
    const gain = tf.ones([12]);
    const before = tf.memory().numTensors;
    const grads = tf.tidy(() =>
      tf.grads((xs: tf.Tensor, ws: tf.Tensor) => tf.sum(layerNormFused(geluFused(linearBias(xs, ws, b)), gain, b)))([
        x,
        w,
      ]),
    );
    expect(tf.memory().numTensors).toBe(before + 2);
    tf.dispose([...grads, x, w, b, gain]);
  });

  it("the GPT's fused training path gives the reference path's logits and weight gradients", () => {
    const config: ModelConfig = { vocab: 19, d_model: 16, n_layers: 2, n_heads: 2, context: 12 };
    const rng = new Rng(11);
    // Every weight random (biases and gains included) so that each gradient is exercised.
    const values = new Map(
      paramSpecs(config).map((s) => {
        const n = s.shape.reduce((a, b) => a * b, 1);
        return [s.name, Float32Array.from({ length: n }, () => rng.nextGaussian() * 0.3)];
      }),
    );
    const model = new Gpt(config, values);
    const ids = tf.tensor2d(
      Array.from({ length: 3 * 10 }, () => Math.floor(rng.nextFloat() * config.vocab)),
      [3, 10],
      "int32",
    );
    const run = (reference: boolean) =>
      tf.variableGrads(() => {
        const { logits } = model.forward(ids, { reference });
        return tf.sum(tf.mul(tf.logSoftmax(logits), tf.linspace(-1, 1, config.vocab))) as tf.Scalar;
      }, model.variables());
    const fused = run(false);
    const reference = run(true);
    expect(relativeError(fused.value.dataSync(), reference.value.dataSync())).toBeLessThan(1e-5);
    for (const variable of model.variables()) {
      const g = fused.grads[variable.name]!.dataSync();
      expect(relativeError(g, reference.grads[variable.name]!.dataSync()), variable.name).toBeLessThan(1e-4);
    }
    model.dispose();
  });
  it("the embedding gathers rows and its gradient scatter-adds into them, as the one-hot product does", () => {
    const table = tf.randomNormal([11, 6], 0, 1, "float32", 12) as tf.Tensor2D;
    const dy = tf.randomNormal([9, 6], 0, 1, "float32", 13);
    const loss = (pick: (t: tf.Tensor) => tf.Tensor) => (t: tf.Tensor) => tf.sum(tf.mul(pick(t), dy));
    // Repeated ids accumulate; an id outside [0, 11) picks zeros and gets no gradient, as a one-hot row does.
    for (const values of [
      [3, 0, 10, 3, 3, 7, 0, 1, 2],
      [3, 0, 10, 3, 11, 7, -1, 1, 2],
    ]) {
      const ids = tf.tensor1d(values, "int32");
      const reference = (t: tf.Tensor) => linear(tf.oneHot(ids, 11).toFloat() as tf.Tensor2D, t as tf.Tensor2D);
      expect(embedFused(ids, table).dataSync()).toEqual(reference(table).dataSync());
      const before = tf.memory().numTensors;
      const fused = tf.grad(loss((t) => embedFused(ids, t as tf.Tensor2D)))(table);
      expect(tf.memory().numTensors).toBe(before + 1);
      expect(fused.shape).toEqual([11, 6]);
      expect(relativeError(fused.dataSync(), tf.grad(loss(reference))(table).dataSync())).toBeLessThan(1e-6);
    }
  });
});
