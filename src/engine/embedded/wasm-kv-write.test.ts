/** @module Tests of the in-place KV-cache column write. */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { initWasmBackend } from "./backend.js";
import { writeKvColumn } from "./wasm-kv-write.js";

describe("KV write kernel", () => {
  beforeAll(() => initWasmBackend());

  it("writes the update into one column of every (row, head) and leaves the other columns as they were", () => {
    const [rows, heads, capacity, headDim] = [2, 3, 5, 4];
    const before = Array.from({ length: rows * heads * capacity * headDim }, (_, i) => i);
    const cache = tf.tensor4d(before, [rows, heads, capacity, headDim]);
    const update = tf.tensor4d(
      Array.from({ length: rows * heads * headDim }, (_, i) => -1 - i),
      [rows, heads, 1, headDim],
    );
    const written = writeKvColumn(cache, update, 3);
    const expected = tf.tidy(() => {
      const parts = tf.split(tf.tensor4d(before, [rows, heads, capacity, headDim]), [3, 1, 1], 2);
      return tf.concat([parts[0]!, update, parts[2]!], 2);
    });
    expect(Array.from(written.dataSync())).toEqual(Array.from(expected.dataSync()));
    expect(Array.from(cache.dataSync())).toEqual(Array.from(expected.dataSync())); // in place: the cache itself
    written.dispose();
    expect(cache.isDisposed).toBe(false);
    tf.dispose([cache, update, expected]);
  });

  it("rejects a column outside the capacity and an update of another size", () => {
    const cache = tf.zeros([1, 2, 3, 4]) as tf.Tensor4D;
    expect(() => writeKvColumn(cache, tf.zeros([1, 2, 1, 4]), 3)).toThrow(RangeError);
    expect(() => writeKvColumn(cache, tf.zeros([1, 2, 1, 3]), 0)).toThrow(RangeError);
    cache.dispose();
  });
});
