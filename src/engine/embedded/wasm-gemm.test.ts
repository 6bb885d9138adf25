/**
 * @module Tests of `wasm/gemm.wat` through `wasm-gemm.ts`: products of every layout, edge size and bias against a
 * float64 reference, rows that do not depend on the block they fall in, and no leaked heap buffers.
 */
import { readFileSync } from "node:fs";
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { assemble } from "../../../scripts/build-wasm.js";
import { initWasmBackend } from "./backend.js";
import { type GemmBackend, gemm, gemmAvailable, gemmSwitch } from "./wasm-gemm.js";

/** C = op(A)·op(B) + bias in float64, from the stored (possibly transposed) operands. */
function reference(
  a: Float32Array,
  b: Float32Array,
  bias: Float32Array | undefined,
  dims: { m: number; k: number; n: number },
  transposeA: boolean,
  transposeB: boolean,
): Float64Array {
  const { m, k, n } = dims;
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let sum = bias ? bias[j]! : 0;
      for (let p = 0; p < k; p++)
        sum += a[transposeA ? p * m + i : i * k + p]! * b[transposeB ? j * k + p : p * n + j]!;
      out[i * n + j] = sum;
    }
  return out;
}

/** Runs the kernel on fresh tensors and returns C. */
function run(
  a: tf.Tensor,
  b: tf.Tensor,
  bias: tf.Tensor | undefined,
  dims: { m: number; k: number; n: number },
  transposeA: boolean,
  transposeB: boolean,
): Float32Array {
  const backend = tf.backend() as unknown as GemmBackend;
  const out = backend.makeOutput([dims.m, dims.n], "float32");
  const result = tf.engine().makeTensorFromTensorInfo(out);
  gemm(backend, { tensor: a, transposed: transposeA }, { tensor: b, transposed: transposeB }, bias, result, dims);
  const values = result.dataSync() as Float32Array;
  result.dispose();
  return values;
}

describe("gemm.wat (fused multiply-add matrix product)", () => {
  beforeAll(() => initWasmBackend());

  it("gemm.wasm.ts is gemm.wat assembled (run `npx tsx scripts/build-wasm.ts` after editing the .wat)", async () => {
    const wat = readFileSync(new URL("./wasm/gemm.wat", import.meta.url), "utf8");
    const generated = readFileSync(new URL("./wasm/gemm.wasm.ts", import.meta.url), "utf8");
    expect(generated).toBe(await assemble("gemm.wat", wat));
  });

  it("runs here: Node 20 validates relaxed SIMD once its flag is set", () => {
    expect(gemmAvailable()).toBe(true);
  });

  // M: under one 4-row block, whole blocks, blocks and a remainder; N: under, at and past one 8-column panel.
  const sizes = [
    { m: 1, k: 1, n: 1 },
    { m: 3, k: 5, n: 7 },
    { m: 4, k: 8, n: 8 },
    { m: 5, k: 3, n: 9 },
    { m: 9, k: 17, n: 16 },
    { m: 17, k: 33, n: 23 },
    { m: 64, k: 128, n: 40 },
  ];
  for (const dims of sizes)
    for (const [transposeA, transposeB] of [
      [false, false],
      [true, false],
      [false, true],
      [true, true],
    ] as const)
      for (const withBias of [false, true])
        it(`[${dims.m}, ${dims.k}] × [${dims.k}, ${dims.n}], A${transposeA ? "ᵀ" : ""} B${transposeB ? "ᵀ" : ""}${withBias ? " + bias" : ""}: equals the float64 product`, () => {
          const { m, k, n } = dims;
          const a = tf.randomNormal(transposeA ? [k, m] : [m, k], 0, 1, "float32", m + k);
          const b = tf.randomNormal(transposeB ? [n, k] : [k, n], 0, 1, "float32", k + n);
          const bias = withBias ? tf.randomNormal([n], 0, 1, "float32", n) : undefined;
          const buffersBefore = tf.memory().numDataBuffers;
          const got = run(a, b, bias, dims, transposeA, transposeB);
          expect(tf.memory().numDataBuffers).toBe(buffersBefore);
          const expected = reference(
            a.dataSync() as Float32Array,
            b.dataSync() as Float32Array,
            bias?.dataSync() as Float32Array | undefined,
            dims,
            transposeA,
            transposeB,
          );
          // float32 accumulation of k products of unit normals: error grows about as sqrt(k)·ε·|terms|
          const tolerance = 1e-5 * Math.sqrt(k) * 4;
          for (let i = 0; i < expected.length; i++) expect(Math.abs(got[i]! - expected[i]!)).toBeLessThan(tolerance);
          tf.dispose([a, b, ...(bias ? [bias] : [])]);
        });

  it("gives each row the same bits whether it falls in a 4-row block or in the remainder", () => {
    const dims = { m: 7, k: 50, n: 13 };
    const a = tf.randomNormal([dims.m, dims.k], 0, 1, "float32", 5);
    const b = tf.randomNormal([dims.k, dims.n], 0, 1, "float32", 6);
    const bias = tf.randomNormal([dims.n], 0, 1, "float32", 7);
    const all = run(a, b, bias, dims, false, false);
    for (let row = 0; row < dims.m; row++) {
      const one = tf.slice(a, [row, 0], [1, dims.k]);
      const alone = run(one, b, bias, { ...dims, m: 1 }, false, false);
      expect(alone).toEqual(all.slice(row * dims.n, (row + 1) * dims.n));
      one.dispose();
    }
    tf.dispose([a, b, bias]);
  });
});

describe("ARCLIGHT_WASM_FMA", () => {
  it("turns the kernel off with 0, false, off or no, leaves it on when unset, 1, true, on or yes", () => {
    for (const value of ["0", "false", "OFF", " no "]) expect(gemmSwitch(value), value).toBe(false);
    for (const value of [undefined, "", "1", "true", "On", "yes"]) expect(gemmSwitch(value), String(value)).toBe(true);
  });

  it("refuses any other value, naming the variable", () => {
    expect(() => gemmSwitch("2")).toThrow(
      new RangeError('ARCLIGHT_WASM_FMA="2": expected 0 or 1 (also off/on, false/true, no/yes)'),
    );
  });
});
