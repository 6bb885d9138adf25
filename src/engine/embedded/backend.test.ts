/** @module Tests of the wasm backend set-up: the buffer-sharing `Identity` kernel keeps tensors correct. */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { initWasmBackend } from "./backend.js";

describe("wasm backend", () => {
  beforeAll(() => initWasmBackend());

  it("runs on wasm", () => {
    expect(tf.getBackend()).toBe("wasm");
  });

  it("clone shares the buffer: no new data buffer, and the clone stays readable after the source is disposed", () => {
    const source = tf.tensor1d([1, 2, 3]);
    const buffersBefore = tf.memory().numDataBuffers;
    const copy = tf.clone(source);
    expect(tf.memory().numDataBuffers).toBe(buffersBefore);
    source.dispose();
    expect(Array.from(copy.dataSync())).toEqual([1, 2, 3]);
    copy.dispose();
  });

  it("a clone taken before a variable's assign keeps the old values", () => {
    const variable = tf.variable(tf.tensor1d([1, 2]));
    const snapshot = tf.clone(variable);
    variable.assign(tf.tensor1d([5, 6]));
    expect(Array.from(snapshot.dataSync())).toEqual([1, 2]);
    expect(Array.from(variable.dataSync())).toEqual([5, 6]);
    tf.dispose([variable, snapshot]);
  });

  it("gradients through saved tensors are unchanged (d/dx of x·x·x is 3x²)", () => {
    const grad = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(tf.mul(x, x), x)));
    expect(Array.from(grad(tf.tensor1d([1, 2, -3])).dataSync())).toEqual([3, 12, 27]);
  });
});
