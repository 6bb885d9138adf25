/**
 * @module Products on tfjs's wasm heap with relaxed SIMD's fused multiply-add (`wasm/gemm.wat`): XNNPACK in
 * tfjs-backend-wasm 4.22 is plain SIMD128, a multiply and an add per lane. Operands are read through strides, so
 * transposes cost nothing. Node 20 needs `--experimental-wasm-relaxed-simd`, set by {@link gemmAvailable};
 * `ARCLIGHT_WASM_FMA=0` keeps XNNPACK. Results differ from XNNPACK by float32 rounding only.
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
 * `gemm.wat`'s exports, pointers and strides in bytes: `pack` writes B (B[k][n] at b + k·kStride + n·nStride) and the
 * bias into `bp`; `gemm` computes C = A·B + bias, A[i][k] at a + i·rowStride + k·kStride.
 */
export interface GemmExports {
  pack(b: number, kStride: number, nStride: number, bias: number, bp: number, k: number, n: number): void;
  gemm(a: number, rowStride: number, kStride: number, bp: number, c: number, m: number, k: number, n: number): void;
}

/** Floats of a packed B: ceil(N/8)·8 columns of K rows, then the bias padded to that width. */
export function packedFloats(k: number, n: number): number {
  const paddedN = Math.ceil(n / 8) * 8;
  return paddedN * k + paddedN;
}

/** The environment variable that turns the kernel off (`0`), for comparisons with XNNPACK. */
export const GEMM_ENV = "ARCLIGHT_WASM_FMA";

/** {@link GEMM_ENV} as a boolean (unset: on). @throws {RangeError} for an unknown value, so a typo is not ignored */
export function gemmSwitch(value: string | undefined): boolean {
  const word = (value ?? "").trim().toLowerCase();
  if (word === "" || word === "1" || word === "true" || word === "on" || word === "yes") return true;
  if (word === "0" || word === "false" || word === "off" || word === "no") return false;
  throw new RangeError(`${GEMM_ENV}=${JSON.stringify(value)}: expected 0 or 1 (also off/on, false/true, no/yes)`);
}

let available: boolean | undefined;
let bytes: Uint8Array | undefined;

/** Whether {@link gemm} runs here (decided once per process). @throws {RangeError} from {@link gemmSwitch} */
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

/** `gemm.wat` over the backend's heap (once per heap). @throws {Error} when {@link gemmAvailable} is false */
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
 * C = op(A)·op(B) (+ bias), [M, N] row-major, into `out` at `outByteOffset`.
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

/** Packs B once and lets `use` run products against it (a broadcast B's batch entries). */
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
