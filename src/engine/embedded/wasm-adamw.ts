/**
 * @module The AdamW update of one weight as one wasm SIMD dispatch (`adamw` of `wasm/decode.wat`), bit-identical to
 * `adamw.ts`'s tfjs ops: it runs while gradient workers wait, so each dispatch costs every thread.
 */
import * as tf from "@tensorflow/tfjs";
import { decodeKernelsOn, heapOffset, registerWasmKernel } from "./wasm-decode.js";

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) this kernel uses. */
interface WasmBackendInternals {
  wasm: { HEAP32: Int32Array };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

/** Name of the kernel registered by {@link installAdamwKernel}. */
export const ADAMW_KERNEL = "ArclightAdamW";

/** The scalars of one update, as `adamw.ts` computes them for a step. */
export interface AdamwScalars {
  beta1: number;
  beta2: number;
  /** 1 − β1ᵗ */
  correction1: number;
  /** 1 − β2ᵗ */
  correction2: number;
  epsilon: number;
  learningRate: number;
  /** The factor on the weight before the step: 1 − lr·λ with decay, else 1. */
  decayFactor: number;
}

/** Registers {@link ADAMW_KERNEL} on the wasm backend; idempotent. */
export function installAdamwKernel(): void {
  registerWasmKernel<WasmBackendInternals>(ADAMW_KERNEL, (inputs, attrs, backend) => {
    const { w, g, m, v } = inputs as Record<"w" | "g" | "m" | "v", tf.TensorInfo>;
    const s = attrs as unknown as AdamwScalars;
    const at = (t: tf.TensorInfo): number => heapOffset(backend, t);
    const [outW, outM, outV] = [0, 1, 2].map(() => backend.makeOutput(w.shape, "float32")) as [
      tf.TensorInfo,
      tf.TensorInfo,
      tf.TensorInfo,
    ];
    const finite = backend.makeOutput([1], "int32");
    const ok = decodeKernelsOn(backend).adamw(
      ...[at(w), at(g), at(m), at(v), at(outW), at(outM), at(outV), tf.util.sizeFromShape(w.shape)],
      ...[s.beta1, 1 - s.beta1, s.beta2, 1 - s.beta2, s.correction1, s.correction2, s.epsilon, s.learningRate],
      s.decayFactor,
    );
    backend.wasm.HEAP32[at(finite) / 4] = ok;
    return [outW, outM, outV, finite];
  });
}

/**
 * One AdamW update via {@link ADAMW_KERNEL}; `undefined` unless on wasm with four float32 tensors of one shape and a
 * size divisible by 4. The caller owns the results.
 * @see Loshchilov & Hutter, arXiv:1711.05101 (Algorithm 2)
 */
export function adamwUpdate(
  w: tf.Tensor,
  g: tf.Tensor,
  m: tf.Tensor,
  v: tf.Tensor,
  scalars: AdamwScalars,
): { next: [w: tf.Tensor, m: tf.Tensor, v: tf.Tensor]; finite: boolean } | undefined {
  const fits =
    tf.getBackend() === "wasm" &&
    w.size % 4 === 0 &&
    [w, g, m, v].every((t) => t.dtype === "float32" && tf.util.arraysEqual(t.shape, w.shape));
  if (!fits) return undefined;
  const [nextW, nextM, nextV, finite] = tf
    .engine()
    .runKernel(ADAMW_KERNEL, { w, g, m, v }, scalars as unknown as tf.NamedAttrMap) as tf.Tensor[];
  const ok = finite!.dataSync()[0] === 1;
  finite!.dispose();
  return { next: [nextW!, nextM!, nextV!], finite: ok };
}
