/**
 * @module A forward-only layer-norm kernel for tfjs's wasm backend: one dispatch that normalises each row in place
 * of the eight tfjs ops of the differentiable {@link layerNorm} (mean, centre, square, mean, add ε, rsqrt, scale,
 * shift). A decode step of the 4-layer model runs nine norms over a handful of rows, where per-op dispatch (~10 µs)
 * costs more than the arithmetic. The arithmetic is `layerNorm` of `wasm/decode.wat` (WebAssembly SIMD, statistics
 * summed in float32 4 lanes at a time), so values differ from the tfjs ops only by float32 rounding.
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

/**
 * Layer norm over the last axis through {@link LAYER_NORM_KERNEL} (forward only; call
 * {@link installLayerNormKernel} first, as `initWasmBackend` does).
 * @param x - float32 [N, C]
 * @param gain - float32 [C]
 * @param bias - float32 [C]
 * @returns [N, C]; no gradient
 * @see Ba, Kiros & Hinton, "Layer Normalization", arXiv:1607.06450
 */
export function layerNormInference(x: tf.Tensor2D, gain: tf.Tensor, bias: tf.Tensor): tf.Tensor2D {
  return tf.engine().runKernel(LAYER_NORM_KERNEL, { x, gain, bias }, {}) as tf.Tensor2D;
}
