/**
 * @module A `BatchMatMul` kernel that keeps batched and transposed products on a fast path (the stock kernel falls
 * back to a scalar loop): the `gemm.wat` kernel via strides where relaxed SIMD is available, else an explicit
 * transpose and zero-copy per-entry views for XNNPACK. Also {@link affine}, a one-dispatch `x @ w + b`.
 */
import * as tf from "@tensorflow/tfjs";
import { type GemmBackend, type GemmOperand, gemm, gemmAvailable, gemmPacked } from "./wasm-gemm.js";

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) this kernel uses. */
interface WasmBackendInternals {
  wasm: {
    cwrap(name: string, returns: null, args: string[]): (...args: unknown[]) => void;
    tfjs: {
      registerTensor(id: number, size: number, memoryOffset: number): void;
      disposeData(id: number): void;
    };
  };
  dataIdMap: { get(dataId: object): { id: number; memoryOffset: number } };
  dataIdNextNumber: number;
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  disposeData(dataId: object): void;
}

/** The exported C entry point of wasm's matmul: (aId, aShape, aRank, bId, bShape, bRank, tA, tB, outId). */
type RawMatMul = (...args: (number | boolean | Uint8Array)[]) => void;

/** Fewer rows per entry than this stay on the stock kernel: dispatch and weight packing cost more than they save. */
export const MIN_ROWS_FOR_XNNPACK = 8;

const BATCHED = Symbol("batchedXnnMatMul");

/** Registers the kernel in place of wasm's `BatchMatMul`; idempotent. Call before selecting the backend. */
export function installBatchedXnnMatMul(): void {
  const original = tf.getKernel("BatchMatMul", "wasm");
  if (!original || BATCHED in original.kernelFunc) return;
  const kernelFunc = (args: Parameters<tf.KernelFunc>[0]): tf.TensorInfo => {
    const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
    const { transposeA, transposeB } = args.attrs as { transposeA: boolean; transposeB: boolean };
    const plan = planProduct(a.shape, b.shape, transposeA, transposeB);
    const plain = plan.batch === 1 && !transposeA && !transposeB;
    const partialBroadcast = plan.batchA !== plan.batchB && plan.batchA !== 1 && plan.batchB !== 1;
    const unsupported = partialBroadcast || a.dtype !== "float32" || b.dtype !== "float32";
    if (!unsupported && gemmAvailable()) return multiplyWithGemm(args, plan, transposeA, transposeB);
    if (plain || unsupported || plan.rows < MIN_ROWS_FOR_XNNPACK) return original.kernelFunc(args) as tf.TensorInfo;
    const temps: tf.TensorInfo[] = [];
    const a3 = operand(args, a, [plan.batchA, plan.rows, plan.inner], transposeA, temps);
    const b3 = operand(args, b, [plan.batchB, plan.inner, plan.cols], transposeB, temps);
    const backend = args.backend as unknown as WasmBackendInternals;
    const out = backend.makeOutput([plan.batch, plan.rows, plan.cols], "float32");
    multiplyEntries(backend, plan, a3, b3, out);
    for (const t of temps) backend.disposeData(t.dataId);
    return { ...out, shape: plan.outShape };
  };
  Object.defineProperty(kernelFunc, BATCHED, { value: true });
  tf.unregisterKernel("BatchMatMul", "wasm");
  tf.registerKernel({ ...original, kernelFunc });
}

/** The product on `wasm/gemm.wat`: entries in place, transposes through strides, a broadcast B packed once. */
function multiplyWithGemm(
  args: Parameters<tf.KernelFunc>[0],
  plan: ProductPlan,
  transposeA: boolean,
  transposeB: boolean,
): tf.TensorInfo {
  const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
  const backend = args.backend as unknown as WasmBackendInternals & GemmBackend;
  const out = backend.makeOutput(plan.outShape, "float32");
  const dims = { m: plan.rows, k: plan.inner, n: plan.cols };
  const aBytes = plan.rows * plan.inner * 4;
  const bBytes = plan.inner * plan.cols * 4;
  const outBytes = plan.rows * plan.cols * 4;
  const entryOf = (i: number): GemmOperand => ({
    tensor: a,
    byteOffset: plan.batchA === 1 ? 0 : i * aBytes,
    transposed: transposeA,
  });
  if (plan.batchB === 1) {
    gemmPacked(backend, { tensor: b, transposed: transposeB }, undefined, dims, (run) => {
      for (let i = 0; i < plan.batch; i++) run(entryOf(i), out, i * outBytes);
    });
  } else {
    for (let i = 0; i < plan.batch; i++) {
      const bEntry = { tensor: b, byteOffset: i * bBytes, transposed: transposeB };
      gemm(backend, entryOf(i), bEntry, undefined, out, dims, i * outBytes);
    }
  }
  return out;
}

/** `x` as [batch, r, c] in memory: a reshape, or a wasm transpose when `transpose`; new tensors go to `temps`. */
function operand(
  args: Parameters<tf.KernelFunc>[0],
  x: tf.TensorInfo,
  shape: [number, number, number],
  transpose: boolean,
  temps: tf.TensorInfo[],
): tf.TensorInfo {
  const [batch, r, c] = shape;
  const stored = transpose ? [batch, c, r] : shape;
  const reshaped = tf.getKernel("Reshape", "wasm")!.kernelFunc({
    inputs: { x },
    backend: args.backend,
    attrs: { shape: stored },
  }) as tf.TensorInfo;
  temps.push(reshaped);
  if (!transpose) return reshaped;
  const transposed = tf.getKernel("Transpose", "wasm")!.kernelFunc({
    inputs: { x: reshaped },
    backend: args.backend,
    attrs: { perm: [0, 2, 1] },
  }) as tf.TensorInfo;
  temps.push(transposed);
  return transposed;
}

let rawMatMul: RawMatMul | undefined;

/** Runs wasm's unbatched matmul once per batch entry on zero-copy views of `a3`, `b3` and `out`. */
function multiplyEntries(
  backend: WasmBackendInternals,
  plan: ProductPlan,
  a3: tf.TensorInfo,
  b3: tf.TensorInfo,
  out: tf.TensorInfo,
): void {
  rawMatMul ??= backend.wasm.cwrap("BatchMatMul", null, [
    ...["number", "array", "number", "number", "array", "number", "number", "number", "number"],
  ]) as RawMatMul;
  const aShape = shapeBytes([1, plan.rows, plan.inner]);
  const bShape = shapeBytes([1, plan.inner, plan.cols]);
  const aBase = backend.dataIdMap.get(a3.dataId).memoryOffset;
  const bBase = backend.dataIdMap.get(b3.dataId).memoryOffset;
  const outBase = backend.dataIdMap.get(out.dataId).memoryOffset;
  const { registerTensor, disposeData } = backend.wasm.tfjs;
  const aSize = plan.rows * plan.inner;
  const bSize = plan.inner * plan.cols;
  const outSize = plan.rows * plan.cols;
  for (let i = 0; i < plan.batch; i++) {
    // Fresh ids each time: the stock kernel caches an XNNPACK operator per B id (freed when the id is disposed).
    const aId = backend.dataIdNextNumber++;
    const bId = backend.dataIdNextNumber++;
    const outId = backend.dataIdNextNumber++;
    registerTensor(aId, aSize, aBase + (plan.batchA === 1 ? 0 : i * aSize * 4));
    registerTensor(bId, bSize, bBase + (plan.batchB === 1 ? 0 : i * bSize * 4));
    registerTensor(outId, outSize, outBase + i * outSize * 4);
    rawMatMul(aId, aShape, 3, bId, bShape, 3, false, false, outId);
    disposeData(aId);
    disposeData(bId);
    disposeData(outId);
  }
}

/** Name of the forward-only `x @ w + b` kernel registered by {@link installAffineKernel}. */
export const AFFINE_KERNEL = "ArclightAffine";

/** Registers {@link AFFINE_KERNEL}: x [N, K] @ w [K, M] (+ bias) in one dispatch (`tf.fused.matMul` takes five). */
export function installAffineKernel(): void {
  if (tf.getKernel(AFFINE_KERNEL, "wasm")) return;
  let raw: ((...args: (number | boolean | Uint8Array)[]) => void) | undefined;
  tf.registerKernel({
    kernelName: AFFINE_KERNEL,
    backendName: "wasm",
    kernelFunc: (args) => {
      const { x, w, bias } = args.inputs as { x: tf.TensorInfo; w: tf.TensorInfo; bias?: tf.TensorInfo };
      const backend = args.backend as unknown as WasmBackendInternals & GemmBackend;
      if (gemmAvailable()) {
        const [rows, inner] = x.shape as [number, number];
        const cols = w.shape[1]!;
        const out = backend.makeOutput([rows, cols], "float32");
        const dims = { m: rows, k: inner, n: cols };
        gemm(backend, { tensor: x, transposed: false }, { tensor: w, transposed: false }, bias, out, dims);
        return out;
      }
      raw ??= backend.wasm.cwrap("_FusedMatMul", null, [
        ...["number", "array", "number", "number", "array", "number"],
        ...["number", "number", "number", "number", "number", "number", "number"],
      ]) as RawMatMul;
      const [rows, inner] = x.shape as [number, number];
      const cols = w.shape[1]!;
      const out = backend.makeOutput([rows, cols], "float32");
      const id = (t: tf.TensorInfo): number => backend.dataIdMap.get(t.dataId).id;
      const biasId = bias ? id(bias) : 0;
      // (a, aShape, aRank, b, bShape, bRank, transposeA, transposeB, activation 0 = linear, bias, prelu, alpha, out)
      raw(
        id(x),
        shapeBytes([1, rows, inner]),
        3,
        id(w),
        shapeBytes([1, inner, cols]),
        3,
        false,
        false,
        0,
        biasId,
        0,
        0,
        id(out),
      );
      return out;
    },
  });
}

/** Forward-only `x @ w + b`, [N, M]; call {@link installAffineKernel} first. */
export function affine(x: tf.Tensor2D, w: tf.Tensor2D, bias?: tf.Tensor1D): tf.Tensor2D {
  const inputs: tf.NamedTensorMap = bias ? { x, w, bias } : { x, w };
  return tf.engine().runKernel(AFFINE_KERNEL, inputs, {}) as tf.Tensor2D;
}

/** A shape as the bytes of int32 values (wasm's `size_t` is 32-bit). */
function shapeBytes(shape: number[]): Uint8Array {
  return new Uint8Array(new Int32Array(shape).buffer);
}

/** Dimensions of a (possibly transposed, possibly broadcast) batched product. */
interface ProductPlan {
  batchA: number;
  batchB: number;
  batch: number;
  rows: number;
  inner: number;
  cols: number;
  outShape: number[];
}

function planProduct(aShape: number[], bShape: number[], transposeA: boolean, transposeB: boolean): ProductPlan {
  const ra = aShape.length;
  const rb = bShape.length;
  const rows = transposeA ? aShape[ra - 1]! : aShape[ra - 2]!;
  const inner = transposeA ? aShape[ra - 2]! : aShape[ra - 1]!;
  const cols = transposeB ? bShape[rb - 2]! : bShape[rb - 1]!;
  const outerA = aShape.slice(0, -2);
  const outerB = bShape.slice(0, -2);
  const batchA = outerA.reduce((n, d) => n * d, 1);
  const batchB = outerB.reduce((n, d) => n * d, 1);
  const outer = tf.broadcast_util.assertAndGetBroadcastShape(outerA, outerB);
  return { batchA, batchB, batch: Math.max(batchA, batchB), rows, inner, cols, outShape: [...outer, rows, cols] };
}
