/**
 * @module Two kernels for training's backward pass on tfjs's wasm backend, written by hand in WebAssembly SIMD
 * (`columnSum` and `geluGrad` of `wasm/decode.wat`) and run on tfjs's own heap:
 * - {@link columnSum}: the sum over the rows of an [N, M] matrix in one pass. tfjs-wasm's `Sum` reduces along the
 *   innermost axis only, so a sum over axis 0 (every bias and layer-norm gain gradient) first transposes the whole
 *   matrix, then reduces it.
 * - {@link geluGrad}: GELU's input gradient from its input and the σ(2u) the forward pass kept, in one pass instead
 *   of nine tfjs ops that each read and write the whole [N, 4C] matrix.
 * Values differ from the tfjs ops by float32 rounding (summation order, operation order).
 */
import * as tf from "@tensorflow/tfjs";
import { GELU_CUBE, GELU_LINEAR } from "./ops.js";
import { decodeKernelsOn, heapOffset, registerWasmKernel } from "./wasm-decode.js";

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) these kernels use. */
interface WasmBackendInternals {
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

/** Name of the column-sum kernel registered by {@link installBackwardKernels}. */
export const COLUMN_SUM_KERNEL = "ArclightColumnSum";
/** Name of the GELU-gradient kernel registered by {@link installBackwardKernels}. */
export const GELU_GRAD_KERNEL = "ArclightGeluGrad";

/** Registers {@link COLUMN_SUM_KERNEL} and {@link GELU_GRAD_KERNEL} on the wasm backend; idempotent. */
export function installBackwardKernels(): void {
  registerWasmKernel<WasmBackendInternals>(COLUMN_SUM_KERNEL, (inputs, _attrs, backend) => {
    const x = inputs.x as tf.TensorInfo;
    const [rows, width] = x.shape as [number, number];
    const out = backend.makeOutput([width], "float32");
    const at = (t: tf.TensorInfo): number => heapOffset(backend, t);
    decodeKernelsOn(backend).columnSum(at(x), at(out), rows, width);
    return out;
  });
  registerWasmKernel<WasmBackendInternals>(GELU_GRAD_KERNEL, (inputs, _attrs, backend) => {
    const { x, s, dy } = inputs as { x: tf.TensorInfo; s: tf.TensorInfo; dy: tf.TensorInfo };
    const dx = backend.makeOutput(x.shape, "float32");
    const at = (t: tf.TensorInfo): number => heapOffset(backend, t);
    const size = tf.util.sizeFromShape(x.shape);
    decodeKernelsOn(backend).geluGrad(at(x), at(s), at(dy), at(dx), size, GELU_CUBE, GELU_LINEAR);
    return dx;
  });
}

/**
 * Σ over the rows of `x` (what `tf.sum(x, 0)` computes), through {@link COLUMN_SUM_KERNEL} when the wasm backend is
 * active and `x` is float32, else through `tf.sum`. No gradient: for use inside gradient functions.
 * @param x - [N, M]
 * @returns [M]
 */
export function columnSum(x: tf.Tensor2D): tf.Tensor1D {
  if (tf.getBackend() !== "wasm" || x.dtype !== "float32") return tf.sum(x, 0);
  return tf.engine().runKernel(COLUMN_SUM_KERNEL, { x }, {}) as tf.Tensor1D;
}

/**
 * The input gradient of GELU (tanh approximation), dy·GELU′(x) = dy·(s + x·s·(1 − s)·(2u)′) with s = σ(2u), through
 * {@link GELU_GRAD_KERNEL} when the wasm backend is active, all three are float32 of one shape and the size is a
 * multiple of 4; `undefined` otherwise (the caller then uses tfjs ops). No gradient of its own.
 * @param x - GELU's input
 * @param sigmoid2u - σ(2u) of that input, as the forward pass computed it
 * @param dy - the gradient of GELU's output
 * @returns dx, same shape, or `undefined` when the kernel does not take these inputs
 * @see Hendrycks & Gimpel, "Gaussian Error Linear Units (GELUs)", arXiv:1606.08415
 */
export function geluGrad(x: tf.Tensor, sigmoid2u: tf.Tensor, dy: tf.Tensor): tf.Tensor | undefined {
  const fits =
    tf.getBackend() === "wasm" &&
    [x, sigmoid2u, dy].every((t) => t.dtype === "float32" && tf.util.arraysEqual(t.shape, x.shape)) &&
    x.size % 4 === 0;
  return fits ? (tf.engine().runKernel(GELU_GRAD_KERNEL, { x, s: sigmoid2u, dy }, {}) as tf.Tensor) : undefined;
}
