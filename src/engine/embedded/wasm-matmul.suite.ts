/** @module `wasm-matmul.ts` tests, run once per path (gemm; XNNPACK with `ARCLIGHT_WASM_FMA=0`). */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { initWasmBackend } from "./backend.js";
import { gemmAvailable } from "./wasm-gemm.js";
import { affine, MIN_ROWS_FOR_XNNPACK } from "./wasm-matmul.js";

/** Swaps the last two axes. */
function swapLast(x: tf.Tensor): tf.Tensor {
  const perm = [...x.shape.keys()];
  perm.splice(-2, 2, x.rank - 1, x.rank - 2);
  return tf.transpose(x, perm);
}

/** Σ_k a[.., i, k]·b[.., k, j] by broadcast multiply and sum (no matmul kernel involved). */
function reference(a: tf.Tensor, b: tf.Tensor, transposeA: boolean, transposeB: boolean): Float32Array {
  return tf.tidy(() => {
    const left = transposeA ? swapLast(a) : a; // [.., M, K]
    const right = transposeB ? swapLast(b) : b; // [.., K, N]
    return tf.sum(tf.mul(tf.expandDims(left, -1), tf.expandDims(right, -3)), -2).dataSync() as Float32Array;
  });
}

/** Element-wise equality to 4 decimals (float summation order differs between kernels). */
function expectClose(got: tf.TypedArray, expected: Float32Array): void {
  expect(got.length).toBe(expected.length);
  for (let i = 0; i < got.length; i++) expect(got[i]).toBeCloseTo(expected[i]!, 4);
}

/** Operand shape for a [.., rows, cols] product input, stored transposed when asked. */
function stored(shape: number[], transpose: boolean): number[] {
  return transpose ? [...shape.slice(0, -2), shape.at(-1)!, shape.at(-2)!] : shape;
}

/** Registers the suite for the path this process's kernels take. */
export function matmulSuite(path: "gemm" | "xnnpack"): void {
  describe(`batched matmul kernel (${path})`, () => {
    beforeAll(() => initWasmBackend());

    it(`runs on ${path}`, () => {
      expect(gemmAvailable()).toBe(path === "gemm");
    });

    const rows = MIN_ROWS_FOR_XNNPACK + 9;
    const cases: [string, number[], number[]][] = [
      ["batched 3-D", [5, rows, 7], [5, 7, 11]],
      ["batched 4-D (attention)", [2, 3, rows, 6], [2, 3, 6, rows]],
      ["A broadcast over B's batch", [1, rows, 5], [4, 5, 3]],
      ["B broadcast over A's batch", [4, rows, 5], [1, 5, 3]],
      ["decode-sized rows (stock kernel)", [6, 1, 9], [6, 9, 13]],
    ];
    for (const [name, aShape, bShape] of cases)
      for (const transposeA of [false, true])
        for (const transposeB of [false, true])
          it(`${name}, transposeA=${transposeA}, transposeB=${transposeB}: equals Σ a·b`, () => {
            const a = tf.randomNormal(stored(aShape, transposeA), 0, 1, "float32", 7);
            const b = tf.randomNormal(stored(bShape, transposeB), 0, 1, "float32", 8);
            const tensorsBefore = tf.memory().numTensors;
            const product = tf.matMul(a, b, transposeA, transposeB);
            const expected = reference(a, b, transposeA, transposeB);
            const got = product.dataSync();
            expect(product.shape).toEqual([
              ...aShape.slice(0, -2).map((d, i) => Math.max(d, bShape[i]!)),
              aShape.at(-2)!,
              bShape.at(-1)!,
            ]);
            expectClose(got, expected);
            product.dispose();
            expect(tf.memory().numTensors).toBe(tensorsBefore);
            tf.dispose([a, b]);
          });

    it("frees its temporaries: wasm holds no extra buffers after many products", () => {
      const a = tf.randomNormal([8, rows, 16]);
      const b = tf.randomNormal([8, rows, 16]);
      const buffersBefore = tf.memory().numDataBuffers;
      for (let i = 0; i < 5; i++) tf.matMul(a, b, false, true).dispose();
      expect(tf.memory().numDataBuffers).toBe(buffersBefore);
      tf.dispose([a, b]);
    });

    it("gradients of a batched product match the transposed-product formulas", () => {
      const a = tf.randomNormal([3, rows, 4], 0, 1, "float32", 1);
      const b = tf.randomNormal([3, 4, 5], 0, 1, "float32", 2);
      const dy = tf.randomNormal([3, rows, 5], 0, 1, "float32", 3);
      const [da, db] = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(tf.matMul(x, y), dy)))([a, b]);
      const expectedDa = reference(dy, b, false, true); // dy·bᵀ
      const expectedDb = reference(a, dy, true, false); // aᵀ·dy
      expectClose(da!.dataSync(), expectedDa);
      expectClose(db!.dataSync(), expectedDb);
      tf.dispose([a, b, dy, da!, db!]);
    });
  });

  describe(`affine kernel (${path})`, () => {
    beforeAll(() => initWasmBackend());

    for (const withBias of [true, false])
      it(`x @ w${withBias ? " + b" : ""} equals Σ x·w${withBias ? " + b" : ""}, shape [N, M]`, () => {
        const x = tf.randomNormal([7, 5], 0, 1, "float32", 11) as tf.Tensor2D;
        const w = tf.randomNormal([5, 3], 0, 1, "float32", 12) as tf.Tensor2D;
        const b = tf.randomNormal([3], 0, 1, "float32", 13) as tf.Tensor1D;
        const got = withBias ? affine(x, w, b) : affine(x, w);
        const expected = tf.tidy(() => {
          const product = tf.sum(tf.mul(tf.expandDims(x, -1), tf.expandDims(w, 0)), 1); // [N, M]
          return (withBias ? tf.add(product, b) : product).dataSync() as Float32Array;
        });
        expect(got.shape).toEqual([7, 3]);
        expectClose(got.dataSync(), expected);
        tf.dispose([x, w, b, got]);
      });
  });
}
