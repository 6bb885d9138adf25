/**
 * @module tfjs-wasm's `Exp` kernel replaced by a WebAssembly SIMD one (`exp` of `wasm/decode.wat`): the stock kernel
 * calls the C library's `expf` one element at a time. Every e^x of a train step and of scoring goes through it: the
 * log-softmax over the vocabulary and its gradient, and the per-token entropy. Values are Cephes' `expf`
 * polynomial's (the one `wasm-decode.ts`'s kernels use), within float32 rounding of `expf` from −86 up; +∞ above
 * ln(FLT_MAX); below −86, where floats turn subnormal, within 2e-38 of e^x (0 from about −87 down); NaN for NaN.
 */
import * as tf from "@tensorflow/tfjs";
import { decodeKernelsOn, heapOffset } from "./wasm-decode.js";

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) this kernel uses. */
interface WasmBackendInternals {
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

const SIMD_EXP = Symbol("simdExp");

/**
 * Registers the SIMD kernel in place of wasm's `Exp` for float32 inputs (others keep the stock kernel); idempotent.
 * Call before selecting the backend.
 */
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
