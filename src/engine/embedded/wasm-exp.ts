/**
 * @module A wasm SIMD `Exp` kernel (the stock one calls `expf` per element): Cephes' polynomial, within float32
 * rounding from −86 up, +∞ above ln(FLT_MAX), within 2e-38 below −86, NaN for NaN.
 */
import * as tf from "@tensorflow/tfjs";
import { decodeKernelsOn, heapOffset } from "./wasm-decode.js";

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) this kernel uses. */
interface WasmBackendInternals {
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

const SIMD_EXP = Symbol("simdExp");

/** Replaces wasm's float32 `Exp` with the SIMD kernel; idempotent; call before selecting the backend. */
export function installExpKernel(): void {
  const original = tf.getKernel("Exp", "wasm");
  if (!original || SIMD_EXP in original.kernelFunc) return;
  const kernelFunc = (args: Parameters<tf.KernelFunc>[0]): tf.TensorInfo => {
    const x = args.inputs.x as tf.TensorInfo;
    if (x.dtype !== "float32") return original.kernelFunc(args) as tf.TensorInfo;
    const backend = args.backend as unknown as WasmBackendInternals;
    const out = backend.makeOutput(x.shape, "float32");
    decodeKernelsOn(backend).exp(heapOffset(backend, x), heapOffset(backend, out), tf.util.sizeFromShape(x.shape));
    return out;
  };
  Object.defineProperty(kernelFunc, SIMD_EXP, { value: true });
  tf.unregisterKernel("Exp", "wasm");
  tf.registerKernel({ ...original, kernelFunc });
}
