/**
 * @module Backward-pass SIMD kernels: {@link columnSum} (tfjs-wasm's `Sum` reduces only the innermost axis, so axis 0
 * meant a full transpose) and {@link geluGrad} (one pass instead of nine ops over [N, 4C]).
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

/** `tf.sum(x, 0)`, [N, M] → [M], through {@link COLUMN_SUM_KERNEL} on wasm float32; no gradient. */
export function columnSum(x: tf.Tensor2D): tf.Tensor1D {
  if (tf.getBackend() !== "wasm" || x.dtype !== "float32") return tf.sum(x, 0);
  return tf.engine().runKernel(COLUMN_SUM_KERNEL, { x }, {}) as tf.Tensor1D;
}

/**
 * dy·GELU′(x) = dy·(s + x·s·(1 − s)·(2u)′), s = σ(2u); `undefined` unless the kernel takes the inputs. No gradient.
 * @see Hendrycks & Gimpel, arXiv:1606.08415
 */
export function geluGrad(x: tf.Tensor, sigmoid2u: tf.Tensor, dy: tf.Tensor): tf.Tensor | undefined {
  const fits =
    tf.getBackend() === "wasm" &&
    [x, sigmoid2u, dy].every((t) => t.dtype === "float32" && tf.util.arraysEqual(t.shape, x.shape)) &&
    x.size % 4 === 0;
  return fits ? (tf.engine().runKernel(GELU_GRAD_KERNEL, { x, s: sigmoid2u, dy }, {}) as tf.Tensor) : undefined;
}
