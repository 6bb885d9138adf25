/**
 * @module Forward-only layer norm in one dispatch (`layerNorm` of `wasm/decode.wat`) instead of eight tfjs ops: a
 * decode step's norms run over a few rows, where per-op dispatch costs more than the arithmetic.
 */
import * as tf from "@tensorflow/tfjs";
import { LAYER_NORM_EPSILON } from "./ops.js";
import { decodeKernelsOn, heapOffset, registerWasmKernel } from "./wasm-decode.js";

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) this kernel uses. */
interface WasmBackendInternals {
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

/** Name of the kernel registered by {@link installLayerNormKernel}. */
export const LAYER_NORM_KERNEL = "ArclightLayerNorm";

/** Registers {@link LAYER_NORM_KERNEL} on the wasm backend; idempotent. */
export function installLayerNormKernel(): void {
  registerWasmKernel<WasmBackendInternals>(LAYER_NORM_KERNEL, (inputs, _attrs, backend) => {
    const { x, gain, bias } = inputs as { x: tf.TensorInfo; gain: tf.TensorInfo; bias: tf.TensorInfo };
    const [rows, width] = x.shape as [number, number];
    const out = backend.makeOutput([rows, width], "float32");
    const at = (t: tf.TensorInfo): number => heapOffset(backend, t);
    decodeKernelsOn(backend).layerNorm(at(x), at(gain), at(bias), at(out), rows, width, LAYER_NORM_EPSILON);
    return out;
  });
}

/** Forward-only layer norm, [N, C]. @see Ba, Kiros & Hinton, arXiv:1607.06450 */
export function layerNormInference(x: tf.Tensor2D, gain: tf.Tensor, bias: tf.Tensor): tf.Tensor2D {
  return tf.engine().runKernel(LAYER_NORM_KERNEL, { x, gain, bias }, {}) as tf.Tensor2D;
}
