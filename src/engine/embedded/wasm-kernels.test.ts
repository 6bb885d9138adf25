/** @module Tests of the lean wasm data-movement kernels: slices and same-dtype casts give the stock results. */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { initWasmBackend } from "./backend.js";

/** Row-major values 0, 1, 2, … of `shape`. */
function iota(shape: number[], dtype: "float32" | "int32"): tf.Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(
    Array.from({ length: n }, (_, i) => i),
    shape,
    dtype,
  );
}

/** The box of `shape`'s row-major iota starting at `begin` with `size`, computed in plain JS. */
function expectedBox(shape: number[], begin: number[], size: number[]): number[] {
  const strides = shape.map((_, d) => shape.slice(d + 1).reduce((a, b) => a * b, 1));
  const out: number[] = [];
  const walk = (d: number, offset: number): void => {
    if (d === shape.length) {
      out.push(offset);
      return;
    }
    for (let i = 0; i < size[d]!; i++) walk(d + 1, offset + (begin[d]! + i) * strides[d]!);
  };
  walk(0, 0);
  return out;
}

describe("lean wasm kernels", () => {
  beforeAll(() => initWasmBackend());

  const cases: [string, number[], number[], number[]][] = [
    ["1-D middle", [10], [3], [4]],
    ["2-D column block (split of a projection)", [5, 12], [0, 4], [5, 4]],
    ["2-D row block (contiguous)", [6, 3], [2, 0], [3, 3]],
    ["3-D inner box", [4, 5, 6], [1, 2, 3], [2, 3, 2]],
    ["4-D trim of leading KV columns", [2, 3, 7, 4], [0, 0, 3, 0], [2, 3, 4, 4]],
    ["4-D single element", [2, 3, 4, 5], [1, 2, 3, 4], [1, 1, 1, 1]],
    ["whole tensor", [3, 4], [0, 0], [3, 4]],
  ];
  for (const dtype of ["float32", "int32"] as const)
    for (const [name, shape, begin, size] of cases)
      it(`slice ${name} (${dtype}) copies exactly the box`, () => {
        const x = iota(shape, dtype);
        const box = tf.slice(x, begin, size);
        expect(box.shape).toEqual(size);
        expect(box.dtype).toBe(dtype);
        expect(Array.from(box.dataSync())).toEqual(expectedBox(shape, begin, size));
        tf.dispose([x, box]);
      });

  it("slice with an empty extent gives an empty tensor", () => {
    const x = iota([3, 4], "float32");
    const empty = tf.slice(x, [1, 0], [0, 4]);
    expect(empty.shape).toEqual([0, 4]);
    tf.dispose([x, empty]);
  });

  it("split along the last axis gives the three column blocks", () => {
    const x = iota([2, 6], "float32");
    const parts = tf.split(x, 3, 1).map((t) => Array.from(t.dataSync()));
    expect(parts).toEqual([
      [0, 1, 6, 7],
      [2, 3, 8, 9],
      [4, 5, 10, 11],
    ]);
  });

  it("split into uneven sizes along the first axis keeps row order", () => {
    const x = iota([3, 2], "int32");
    const parts = tf.split(x, [1, 2], 0);
    expect(parts.map((t) => t.shape)).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(parts.map((t) => Array.from(t.dataSync()))).toEqual([
      [0, 1],
      [2, 3, 4, 5],
    ]);
  });

  for (const dtype of ["float32", "int32"] as const)
    it(`gather picks whole slices along an inner axis, repeats allowed (${dtype})`, () => {
      const x = iota([2, 3, 2], dtype);
      const picked = tf.gather(x, tf.tensor1d([2, 0, 2], "int32"), 1);
      expect(picked.shape).toEqual([2, 3, 2]);
      expect(Array.from(picked.dataSync())).toEqual([4, 5, 0, 1, 4, 5, 10, 11, 6, 7, 10, 11]);
    });

  it("gather of rows with 2-D indices gives an [.., indices, ..] shape", () => {
    const x = iota([4, 2], "float32");
    const picked = tf.gather(x, tf.tensor2d([3, 1, 0, 0], [2, 2], "int32"));
    expect(picked.shape).toEqual([2, 2, 2]);
    expect(Array.from(picked.dataSync())).toEqual([6, 7, 2, 3, 0, 1, 0, 1]);
  });

  it("gather rejects an index outside the axis", () => {
    const x = iota([3, 2], "float32");
    expect(() => tf.gather(x, tf.tensor1d([3], "int32"))).toThrow(/index value 3/);
  });

  const concatCases: [string, number[], number[], number][] = [
    ["rows (axis 0)", [2, 3], [1, 3], 0],
    ["a KV column (axis 2 of 4-D)", [2, 3, 4, 2], [2, 3, 1, 2], 2],
    ["last axis", [3, 2], [3, 3], 1],
  ];
  for (const dtype of ["float32", "int32"] as const)
    for (const [name, aShape, bShape, axis] of concatCases)
      it(`concat along ${name} (${dtype}) interleaves the inputs' runs`, () => {
        const a = iota(aShape, dtype);
        const b = tf.add(iota(bShape, dtype), tf.scalar(100, dtype));
        const joined = tf.concat([a, b], axis);
        // Reference: the same concat of the nested JS arrays.
        const join = (x: unknown, y: unknown, depth: number): unknown =>
          depth === axis
            ? [...(x as unknown[]), ...(y as unknown[])]
            : (x as unknown[]).map((row, i) => join(row, (y as unknown[])[i], depth + 1));
        const expected = join(a.arraySync(), b.arraySync(), 0);
        expect(joined.dtype).toBe(dtype);
        expect(joined.arraySync()).toEqual(expected);
        tf.dispose([a, b, joined]);
      });

  it("concat skips empty inputs", () => {
    const a = iota([2, 2], "float32");
    const joined = tf.concat([a, tf.zeros([0, 2]), a], 0);
    expect(Array.from(joined.dataSync())).toEqual([0, 1, 2, 3, 0, 1, 2, 3]);
  });

  it("a same-dtype cast shares the buffer and stays readable after the source is disposed", () => {
    const x = tf.tensor1d([1.5, -2]);
    const buffersBefore = tf.memory().numDataBuffers;
    const same = tf.cast(x, "float32");
    expect(tf.memory().numDataBuffers).toBe(buffersBefore);
    x.dispose();
    expect(Array.from(same.dataSync())).toEqual([1.5, -2]);
    same.dispose();
  });

  it("a cast to another dtype still converts", () => {
    const x = tf.tensor1d([1.7, -2.2]);
    expect(Array.from(tf.cast(x, "int32").dataSync())).toEqual([1, -2]);
    expect(Array.from(tf.cast(tf.tensor1d([1, 0], "int32"), "bool").dataSync())).toEqual([1, 0]);
  });
});
