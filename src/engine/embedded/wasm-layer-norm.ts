/**
 * @module A forward-only layer-norm kernel for tfjs's wasm backend: one dispatch that normalises each row in place
 * of the eight tfjs ops of the differentiable {@link layerNorm} (mean, centre, square, mean, add ε, rsqrt, scale,
 * shift). A decode step of the 4-layer model runs nine norms over a handful of rows, where per-op dispatch (~10 µs)
 * costs more than the arithmetic. Statistics accumulate in float64, so values differ from the tfjs ops only by
 * float32 rounding.
 */
import * as tf from "@tensorflow/tfjs";

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) this kernel uses. */
interface WasmBackendInternals {
  wasm: { HEAPF32: Float32Array };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

/** Name of the kernel registered by {@link installLayerNormKernel}. */
export const LAYER_NORM_KERNEL = "ArclightLayerNorm";

/** ε added to the variance, as in {@link layerNorm}. */
const EPSILON = 1e-5;

/** Registers {@link LAYER_NORM_KERNEL} on the wasm backend; idempotent. */
export function installLayerNormKernel(): void {
  if (tf.getKernel(LAYER_NORM_KERNEL, "wasm")) return;
  tf.registerKernel({
    kernelName: LAYER_NORM_KERNEL,
    backendName: "wasm",
    kernelFunc: (args) => {
      const { x, gain, bias } = args.inputs as { x: tf.TensorInfo; gain: tf.TensorInfo; bias: tf.TensorInfo };
      const backend = args.backend as unknown as WasmBackendInternals;
      const [rows, width] = x.shape as [number, number];
      const out = backend.makeOutput([rows, width], "float32");
      const heap = backend.wasm.HEAPF32; // after makeOutput, which may grow the heap
      const at = (t: tf.TensorInfo): number => backend.dataIdMap.get(t.dataId).memoryOffset / 4;
      normalizeRows(heap, at(x), at(gain), at(bias), at(out), rows, width);
      return out;
    },
  });
}

/**
 * Writes (x − mean) / √(variance + ε) · gain + bias for each row of x.
 * @param heap - the wasm heap as float32
 * @param x - index of x [rows, width]
 * @param gain - index of gain [width]
 * @param bias - index of bias [width]
 * @param out - index of the output [rows, width]
 * @param rows - N
 * @param width - C
 */
function normalizeRows(
  heap: Float32Array,
  x: number,
  gain: number,
  bias: number,
  out: number,
  rows: number,
  width: number,
): void {
  for (let r = 0; r < rows; r++) {
    const row = x + r * width;
    let sum = 0;
    for (let i = 0; i < width; i++) sum += heap[row + i]!;
    const mean = sum / width;
    let squares = 0;
    for (let i = 0; i < width; i++) {
      const d = heap[row + i]! - mean;
      squares += d * d;
    }
    const scale = 1 / Math.sqrt(squares / width + EPSILON);
    const target = out + r * width;
    for (let i = 0; i < width; i++)
      heap[target + i] = (heap[row + i]! - mean) * scale * heap[gain + i]! + heap[bias + i]!;
  }
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
