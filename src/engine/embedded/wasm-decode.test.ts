/**
 * @module Tests of the hand-written decode kernels: the assembled module matches its source, attention matches the
 * tfjs ops (split, concat, scaled and biased scores, softmax, weighted sum) and writes only its own column, and GELU
 * matches `ops.ts`'s, at head sizes that do and do not fill the 4-lane loops.
 */
import { readFileSync } from "node:fs";
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { assemble } from "../../../scripts/build-wasm.js";
import { initWasmBackend } from "./backend.js";
import { causalBias, gelu, MASKED } from "./ops.js";
import { causalAttention, decodeAttention, geluInference } from "./wasm-decode.js";

const WAT = new URL("./wasm/decode.wat", import.meta.url);
const GENERATED = new URL("./wasm/decode.wasm.ts", import.meta.url);

/** Max |a − b| over two float arrays of one length. */
function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

/** softmax(q·kᵀ/√d + bias)·v with this step's k, v appended, by tfjs ops. */
function referenceAttention(
  qkv: tf.Tensor2D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  columns: number,
  bias: tf.Tensor2D,
): tf.Tensor2D {
  return tf.tidy(() => {
    const [rows, heads, , headDim] = k.shape;
    const [q, kNew, vNew] = tf.split(qkv, 3, 1).map((t) => tf.reshape(t, [rows, heads, 1, headDim]));
    const keys = tf.concat([tf.slice(k, [0, 0, 0, 0], [rows, heads, columns, headDim]), kNew!], 2);
    const values = tf.concat([tf.slice(v, [0, 0, 0, 0], [rows, heads, columns, headDim]), vNew!], 2);
    const scores = tf.add(
      tf.mul(tf.matMul(q!, keys, false, true), 1 / Math.sqrt(headDim)),
      tf.reshape(bias, [rows, 1, 1, columns + 1]),
    );
    return tf.reshape(tf.matMul(tf.softmax(scores), values), [rows, heads * headDim]) as tf.Tensor2D;
  });
}

describe("decode kernels", () => {
  beforeAll(() => initWasmBackend());

  it("decode.wasm.ts is decode.wat assembled (run `npx tsx scripts/build-wasm.ts` after editing the .wat)", async () => {
    const expected = await assemble("decode.wat", readFileSync(WAT, "utf8"));
    expect(readFileSync(GENERATED, "utf8")).toBe(expected);
  });

  for (const headDim of [8, 6, 5, 1]) {
    it(`attention matches the tfjs ops and writes only column L (head size ${headDim})`, () => {
      const [rows, heads, capacity, columns] = [3, 4, 9, 6];
      const k = tf.randomNormal([rows, heads, capacity, headDim], 0, 1, "float32", 1) as tf.Tensor4D;
      const v = tf.randomNormal([rows, heads, capacity, headDim], 0, 1, "float32", 2) as tf.Tensor4D;
      const qkv = tf.randomNormal([rows, 3 * heads * headDim], 0, 2, "float32", 3) as tf.Tensor2D;
      // Row 0 sees everything, row 1 hides columns 0-2, row 2 sees only the new column.
      const biasValues = new Float32Array(rows * (columns + 1));
      for (let col = 0; col < 3; col++) biasValues[1 * (columns + 1) + col] = MASKED;
      for (let col = 0; col < columns; col++) biasValues[2 * (columns + 1) + col] = MASKED;
      const bias = tf.tensor2d(biasValues, [rows, columns + 1]);
      const expected = referenceAttention(qkv, k, v, columns, bias).dataSync();
      const kBefore = k.arraySync();
      const vBefore = v.arraySync();
      const before = tf.memory().numTensors;
      const y = decodeAttention(qkv, { k, v }, columns, bias);
      expect(tf.memory().numTensors).toBe(before + 1); // y only: the scratch is freed
      expect(y.shape).toEqual([rows, heads * headDim]);
      expect(maxDiff(y.dataSync(), expected)).toBeLessThan(1e-5);
      // Row 2 attends to its new column alone: y is exactly that column's value.
      const q = qkv.arraySync();
      const c = heads * headDim;
      expect(maxDiff(y.arraySync()[2]!, q[2]!.slice(2 * c))).toBeLessThan(1e-6);
      // Column L now holds each row's new key and value; every other column is unchanged.
      const kAfter = k.arraySync();
      const vAfter = v.arraySync();
      for (let b = 0; b < rows; b++)
        for (let h = 0; h < heads; h++)
          for (let col = 0; col < capacity; col++) {
            const keyAt = col === columns ? q[b]!.slice(c + h * headDim, c + (h + 1) * headDim) : kBefore[b]![h]![col]!;
            const valueAt =
              col === columns ? q[b]!.slice(2 * c + h * headDim, 2 * c + (h + 1) * headDim) : vBefore[b]![h]![col]!;
            expect(kAfter[b]![h]![col]).toEqual(keyAt);
            expect(vAfter[b]![h]![col]).toEqual(valueAt);
          }
      tf.dispose([k, v, qkv, bias, y]);
    });
  }

  for (const headDim of [8, 5]) {
    it(`causal attention over whole rows matches the tfjs ops and returns the keys and values (head size ${headDim})`, () => {
      const [batch, seqLen, heads] = [3, 7, 2];
      const c = heads * headDim;
      const qkv = tf.randomNormal([batch * seqLen, 3 * c], 0, 2, "float32", 7) as tf.Tensor2D;
      const expected = tf.tidy(() => {
        const [q, k, v] = tf
          .split(qkv, 3, 1)
          .map((t) => tf.transpose(tf.reshape(t, [batch, seqLen, heads, headDim]), [0, 2, 1, 3]));
        const scores = tf.add(tf.mul(tf.matMul(q!, k!, false, true), 1 / Math.sqrt(headDim)), causalBias(seqLen));
        const y = tf.reshape(tf.transpose(tf.matMul(tf.softmax(scores), v!), [0, 2, 1, 3]), [batch * seqLen, c]);
        return { y: y.dataSync(), k: k!.dataSync(), v: v!.dataSync() };
      });
      const got = causalAttention(qkv, batch, seqLen, heads);
      expect(got.k.shape).toEqual([batch, heads, seqLen, headDim]);
      expect(maxDiff(got.y.dataSync(), expected.y)).toBeLessThan(1e-5);
      expect(maxDiff(got.k.dataSync(), expected.k)).toBe(0);
      expect(maxDiff(got.v.dataSync(), expected.v)).toBe(0);
      expect(() => causalAttention(qkv, batch, seqLen + 1, heads)).toThrow(/does not fit/);
      tf.dispose([qkv, got.y, got.k, got.v]);
    });
  }

  it("attention refuses a full cache and disagreeing shapes", () => {
    const k = tf.zeros([2, 2, 4, 4]) as tf.Tensor4D;
    const qkv = tf.zeros([2, 24]) as tf.Tensor2D;
    expect(() => decodeAttention(qkv, { k, v: k }, 4, tf.zeros([2, 5]))).toThrow(/4 columns fill a capacity of 4/);
    expect(() => decodeAttention(qkv, { k, v: k }, 2, tf.zeros([2, 4]))).toThrow(/disagree/);
    expect(() => decodeAttention(tf.zeros([3, 24]) as tf.Tensor2D, { k, v: k }, 2, tf.zeros([2, 3]))).toThrow(
      /disagree/,
    );
  });

  it("attention over large scores stays finite, and a NaN query gives NaN", () => {
    const k = tf.fill([1, 1, 4, 4], 30) as tf.Tensor4D;
    const v = tf.randomNormal([1, 1, 4, 4], 0, 1, "float32", 4) as tf.Tensor4D;
    const big = tf.tensor2d([[40, 40, 40, 40, 30, 30, 30, 30, 1, 2, 3, 4]]);
    const y = decodeAttention(big, { k, v }, 3, tf.zeros([1, 4]));
    expect(
      maxDiff(y.dataSync(), referenceAttention(big, k, v, 3, tf.zeros([1, 4]) as tf.Tensor2D).dataSync()),
    ).toBeLessThan(1e-4);
    const nan = tf.tensor2d([[Number.NaN, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]]);
    expect(Number.isNaN(decodeAttention(nan, { k, v }, 3, tf.zeros([1, 4])).dataSync()[0])).toBe(true);
  });

  it("GELU matches ops.ts's GELU to float32 rounding, from -100 to 100", () => {
    const x = tf.tidy(() => tf.concat([tf.linspace(-100, 100, 4001), tf.randomNormal([4003], 0, 3, "float32", 5)]));
    const got = geluInference(tf.reshape(x, [4, 2001])).dataSync();
    const expected = gelu(x).dataSync();
    for (let i = 0; i < got.length; i++)
      expect(Math.abs(got[i]! - expected[i]!)).toBeLessThan(2e-6 * Math.max(1, Math.abs(expected[i]!)));
  });

  it("GELU keeps a non-finite input non-finite (the non-finite guard sees it) and maps 0 to 0", () => {
    const got = Array.from(
      geluInference(tf.tensor1d([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0])).dataSync(),
    );
    expect(got.slice(0, 3).every((v) => !Number.isFinite(v))).toBe(true);
    expect(got[3]).toBe(0);
  });
});
