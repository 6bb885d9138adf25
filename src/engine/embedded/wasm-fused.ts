/**
 * @module Fused, differentiable ops for training on tfjs's wasm backend, each one tfjs op with a hand-written gradient
 * in place of a chain of small ones: GELU (one pass over the heap instead of six ops forward and about ten
 * backward, and only its input kept for the backward pass) and `x @ w + b` (wasm's fused matmul + bias, one
 * dispatch, no pre-bias product kept). Keeping fewer intermediates is what bounds the wasm heap during a train
 * step: tfjs saves every op's inputs on the gradient tape, and the heap never shrinks once grown.
 */
import * as tf from "@tensorflow/tfjs";
import { affine } from "./wasm-matmul.js";

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) these kernels use. */
interface WasmBackendInternals {
  wasm: { HEAPF32: Float32Array };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

/** Name of the GELU forward kernel registered by {@link installFusedKernels}. */
export const GELU_KERNEL = "ArclightGelu";
/** Name of the GELU gradient kernel registered by {@link installFusedKernels}: inputs dy and x, output dx. */
export const GELU_GRAD_KERNEL = "ArclightGeluGrad";

/** 2u = x·(GELU_CUBE·x² + GELU_LINEAR) with u = √(2/π)·(x + 0.044715·x³), as in `ops.ts`. */
const GELU_LINEAR = 2 * Math.sqrt(2 / Math.PI);
const GELU_CUBE = 0.044715 * GELU_LINEAR;

/** Heap float index of a tensor's data. */
function at(backend: WasmBackendInternals, t: tf.TensorInfo): number {
  return backend.dataIdMap.get(t.dataId).memoryOffset / 4;
}

/** Registers {@link GELU_KERNEL} and {@link GELU_GRAD_KERNEL} on the wasm backend; idempotent. */
export function installFusedKernels(): void {
  if (tf.getKernel(GELU_KERNEL, "wasm")) return;
  tf.registerKernel({
    kernelName: GELU_KERNEL,
    backendName: "wasm",
    kernelFunc: ({ inputs, backend }) => {
      const x = inputs.x as tf.TensorInfo;
      const wasm = backend as unknown as WasmBackendInternals;
      const out = wasm.makeOutput(x.shape, "float32");
      geluForward(wasm.wasm.HEAPF32, at(wasm, x), at(wasm, out), tf.util.sizeFromShape(x.shape));
      return out;
    },
  });
  tf.registerKernel({
    kernelName: GELU_GRAD_KERNEL,
    backendName: "wasm",
    kernelFunc: ({ inputs, backend }) => {
      const { dy, x } = inputs as { dy: tf.TensorInfo; x: tf.TensorInfo };
      const wasm = backend as unknown as WasmBackendInternals;
      const out = wasm.makeOutput(x.shape, "float32");
      const size = tf.util.sizeFromShape(x.shape);
      geluBackward(wasm.wasm.HEAPF32, at(wasm, dy), at(wasm, x), at(wasm, out), size);
      return out;
    },
  });
}

/**
 * y = x·σ(2u), the tanh-approximation GELU (see `ops.ts`), element by element (heap read after the output's
 * malloc, which may grow the heap).
 */
function geluForward(heap: Float32Array, x: number, out: number, size: number): void {
  for (let i = 0; i < size; i++) {
    const v = heap[x + i]!;
    heap[out + i] = v / (1 + Math.exp(-v * (GELU_CUBE * v * v + GELU_LINEAR)));
  }
}

/** dx = dy·(s + x·s·(1 − s)·(2u)′) with s = σ(2u), (2u)′ = 3·GELU_CUBE·x² + GELU_LINEAR. */
function geluBackward(heap: Float32Array, dy: number, x: number, out: number, size: number): void {
  for (let i = 0; i < size; i++) {
    const v = heap[x + i]!;
    const square = v * v;
    const s = 1 / (1 + Math.exp(-v * (GELU_CUBE * square + GELU_LINEAR)));
    heap[out + i] = heap[dy + i]! * (s + v * s * (1 - s) * (3 * GELU_CUBE * square + GELU_LINEAR));
  }
}

/**
 * GELU (tanh approximation) as one op with its gradient: the same function as `ops.ts`'s {@link gelu}, within
 * float32 rounding. Call {@link installFusedKernels} first (as `initWasmBackend` does).
 * @param x - float32, any shape
 * @returns same shape
 * @see Hendrycks & Gimpel, "Gaussian Error Linear Units (GELUs)", arXiv:1606.08415
 */
export const geluFused = tf.customGrad((...inputs: (tf.Tensor | tf.GradSaveFunc)[]) => {
  const [x, save] = inputs as [tf.Tensor, tf.GradSaveFunc];
  save([x]);
  return {
    value: tf.engine().runKernel(GELU_KERNEL, { x }, {}) as tf.Tensor,
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) =>
      tf.engine().runKernel(GELU_GRAD_KERNEL, { dy, x: saved[0]! }, {}) as tf.Tensor,
  };
}) as (x: tf.Tensor) => tf.Tensor;

/**
 * `x @ w + b` as one op with its gradient: the forward pass is wasm's fused matmul + bias (one dispatch, and no
 * pre-bias product on the tape); the backward pass transposes explicitly so both products stay on XNNPACK, as
 * `ops.ts`'s `linear` does. Call `installAffineKernel` first (as `initWasmBackend` does).
 * @param x - [N, K]
 * @param w - [K, M]
 * @param b - [M]
 * @returns [N, M]
 */
export const linearBias = tf.customGrad((...inputs: (tf.Tensor | tf.GradSaveFunc)[]) => {
  const [x, w, b, save] = inputs as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D, tf.GradSaveFunc];
  save([x, w]);
  return {
    value: affine(x, w, b),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [xs, ws] = saved as [tf.Tensor2D, tf.Tensor2D];
      // dL/dx = dy @ wᵀ: [N, M] @ [M, K]; dL/dw = xᵀ @ dy: [K, N] @ [N, M]; dL/db = Σ_rows dy: [M]
      return [
        tf.matMul(dy as tf.Tensor2D, tf.transpose(ws)),
        tf.matMul(tf.transpose(xs), dy as tf.Tensor2D),
        tf.sum(dy, 0),
      ];
    },
  };
}) as (x: tf.Tensor, w: tf.Tensor, b: tf.Tensor) => tf.Tensor2D;
