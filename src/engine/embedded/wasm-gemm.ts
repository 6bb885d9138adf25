/**
 * @module Matrix products on tfjs's wasm heap with fused multiply-adds (`wasm/gemm.wat`, relaxed SIMD's
 * `f32x4.relaxed_madd`). XNNPACK in tfjs-backend-wasm 4.22 is built for plain SIMD128, which has no multiply-add, so a
 * product costs it a multiply and an add per lane; with one instruction for both, the same product runs faster on
 * CPUs with FMA (figures: docs/benchmarks.md). Either operand may be transposed at no extra cost: the kernel reads A
 * through two strides and packs B through two strides, so no transposed copy is made.
 *
 * Availability: relaxed SIMD is on by default from Node 22 (V8 12.x); Node 20's V8 11.3 has it behind
 * `--experimental-wasm-relaxed-simd`, which {@link gemmAvailable} sets with `v8.setFlagsFromString` the first time it
 * is asked, before compiling this module (the flag changes what V8 accepts when it validates a module; tfjs's own
 * module does not use relaxed SIMD and is not affected). Where the module still does not validate, or where
 * `ARCLIGHT_WASM_FMA=0` (or `off`, `false`, `no`) is set, {@link gemmAvailable} answers false and callers keep XNNPACK.
 *
 * Numerics: relaxed_madd rounds once per multiply-add where the CPU has FMA and twice where it has not (both allowed
 * by the WebAssembly spec), so results differ from XNNPACK's in float32 rounding only; products sum k in order.
 */
import { setFlagsFromString } from "node:v8";
import type * as tf from "@tensorflow/tfjs";
import { WASM_BASE64 } from "./wasm/gemm.wasm.js";
import { heapOffset, withScratch } from "./wasm-decode.js";

/** The WebAssembly JS API as used here (the project's TypeScript libraries leave its types out). */
interface WebAssemblyApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: object };
  validate(bytes: Uint8Array): boolean;
}
const { WebAssembly: wasmApi } = globalThis as unknown as { WebAssembly: WebAssemblyApi };

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) this module uses. */
export interface GemmBackend {
  /** `asm.memory` is the module's `WebAssembly.Memory`, the heap. */
  wasm: { asm: { memory: object } };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  disposeData(dataId: object): void;
}

/**
 * The exports of `gemm.wat`: pointers and strides in bytes, into the heap. `pack` writes B (B[k][n] at
 * b + k·kStride + n·nStride) and the bias (0: zeros) into `bp`, {@link packedFloats} floats; `gemm` computes
 * C = A·B + bias into c (row-major [m, n]) with A[i][k] at a + i·rowStride + k·kStride.
 */
export interface GemmExports {
  pack(b: number, kStride: number, nStride: number, bias: number, bp: number, k: number, n: number): void;
  gemm(a: number, rowStride: number, kStride: number, bp: number, c: number, m: number, k: number, n: number): void;
}

/**
 * Floats of a packed B: ceil(N/8)·8 columns of K rows, then the bias padded to the same width.
 * @param k - B's rows
 * @param n - B's columns
 * @returns floats
 */
export function packedFloats(k: number, n: number): number {
  const paddedN = Math.ceil(n / 8) * 8;
  return paddedN * k + paddedN;
}

/** The environment variable that turns the kernel off (`0`), for comparisons with XNNPACK. */
export const GEMM_ENV = "ARCLIGHT_WASM_FMA";

/**
 * Reads {@link GEMM_ENV}'s value.
 * @param value - the variable as set; unset or empty means on
 * @returns false for `0`, `false`, `off` or `no`; true for `1`, `true`, `on` or `yes` (any case)
 * @throws {RangeError} naming the variable for any other value, so a typo does not silently leave the kernel on
 */
export function gemmSwitch(value: string | undefined): boolean {
  const word = (value ?? "").trim().toLowerCase();
  if (word === "" || word === "1" || word === "true" || word === "on" || word === "yes") return true;
  if (word === "0" || word === "false" || word === "off" || word === "no") return false;
  throw new RangeError(`${GEMM_ENV}=${JSON.stringify(value)}: expected 0 or 1 (also off/on, false/true, no/yes)`);
}

let available: boolean | undefined;
let bytes: Uint8Array | undefined;

/**
 * Whether {@link gemm} can run here: the module validates (relaxed SIMD available, after setting V8's flag for it
 * where that is needed) and `ARCLIGHT_WASM_FMA` does not turn it off ({@link gemmSwitch}). Decided once per process.
 * @returns true when the fused multiply-add kernel is used
 * @throws {RangeError} `ARCLIGHT_WASM_FMA` has a value {@link gemmSwitch} does not know
 */
export function gemmAvailable(): boolean {
  if (available !== undefined) return available;
  if (!gemmSwitch(process.env[GEMM_ENV])) {
    available = false;
    return available;
  }
  bytes = Buffer.from(WASM_BASE64, "base64");
  if (!wasmApi.validate(bytes)) setFlagsFromString("--experimental-wasm-relaxed-simd");
  available = wasmApi.validate(bytes);
  return available;
}

const instances = new WeakMap<object, GemmExports>();

/**
 * `gemm.wat` instantiated over the backend's heap (once per heap).
 * @param backend - tfjs's wasm backend
 * @returns the module's exports
 * @throws {Error} when {@link gemmAvailable} is false
 */
export function gemmKernelsOn(backend: Pick<GemmBackend, "wasm">): GemmExports {
  const memory = backend.wasm.asm.memory;
  let found = instances.get(memory);
  if (!found) {
    if (!gemmAvailable() || !bytes) throw new Error("gemm.wat needs relaxed SIMD, which this runtime lacks");
    found = new wasmApi.Instance(new wasmApi.Module(bytes), { env: { memory } }).exports as unknown as GemmExports;
    instances.set(memory, found);
  }
  return found;
}

/** One operand of a product: a float32 tensor on the backend, and whether to use it transposed. */
export interface GemmOperand {
  tensor: tf.TensorInfo;
  /** Byte offset of this operand's matrix inside the tensor's buffer (a batch entry); default 0. */
  byteOffset?: number;
  transposed: boolean;
}

/**
 * C = op(A)·op(B) (+ bias) for one [M, K] × [K, N] product, written into `out` at `outByteOffset`.
 * @param backend - tfjs's wasm backend, as a kernel function receives it
 * @param a - A: stored [M, K], or [K, M] when `transposed`
 * @param b - B: stored [K, N], or [N, K] when `transposed`
 * @param bias - float32 [N] added to every row, or undefined
 * @param out - float32 tensor receiving C (row-major [M, N]) at `outByteOffset`
 * @param dims - M, K, N
 * @param outByteOffset - byte offset inside `out`; default 0
 * @throws {Error} when {@link gemmAvailable} is false
 */
export function gemm(
  backend: GemmBackend,
  a: GemmOperand,
  b: GemmOperand,
  bias: tf.TensorInfo | undefined,
  out: tf.TensorInfo,
  dims: { m: number; k: number; n: number },
  outByteOffset = 0,
): void {
  gemmPacked(backend, b, bias, dims, (run) => run(a, out, outByteOffset));
}

/**
 * Packs B (and the bias) once, then lets `use` run any number of products against it: for products that share B,
 * such as the batch entries of a broadcast B.
 * @param backend - tfjs's wasm backend
 * @param b - B: stored [K, N], or [N, K] when `transposed`
 * @param bias - float32 [N], or undefined
 * @param dims - M, K, N (M of every product run)
 * @param use - gets `run(a, out, outByteOffset)`, which computes one product into `out`
 */
export function gemmPacked(
  backend: GemmBackend,
  b: GemmOperand,
  bias: tf.TensorInfo | undefined,
  dims: { m: number; k: number; n: number },
  use: (run: (a: GemmOperand, out: tf.TensorInfo, outByteOffset: number) => void) => void,
): void {
  const { m, k, n } = dims;
  const kernels = gemmKernelsOn(backend);
  withScratch(backend, packedFloats(k, n), (bp) => {
    // Offsets are read after the scratch's malloc (offsets survive a heap growth; typed views would not).
    const bAt = heapOffset(backend, b.tensor) + (b.byteOffset ?? 0);
    const [bk, bn] = b.transposed ? [4, k * 4] : [n * 4, 4];
    kernels.pack(bAt, bk, bn, bias ? heapOffset(backend, bias) : 0, bp, k, n);
    use((a, out, outByteOffset) => {
      const aAt = heapOffset(backend, a.tensor) + (a.byteOffset ?? 0);
      const [rowStride, kStride] = a.transposed ? [4, m * 4] : [k * 4, 4];
      kernels.gemm(aAt, rowStride, kStride, bp, heapOffset(backend, out) + outByteOffset, m, k, n);
    });
  });
}
