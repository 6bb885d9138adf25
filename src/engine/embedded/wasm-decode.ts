/**
 * @module Forward-only inference kernels in wasm SIMD (`wasm/decode.wat`) on tfjs's heap: `attend` (one decode
 * step's attention, writing the cache in place), `attendCausal` (prefill and scoring; training keeps its softmax),
 * `gelu`, `layerNorm`, `embed`, `addInPlace`. e^x is Cephes' `expf` polynomial: values differ by float32 rounding.
 */
import * as tf from "@tensorflow/tfjs";
import { GELU_CUBE, GELU_LINEAR } from "./ops.js";
import { WASM_BASE64 } from "./wasm/decode.wasm.js";

/** The WebAssembly JS API as used here (the project's TypeScript libraries leave its types out). */
interface WebAssemblyApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: object };
}
const { WebAssembly: wasmApi } = globalThis as unknown as { WebAssembly: WebAssemblyApi };

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) these kernels use. */
interface WasmBackendInternals {
  /** `asm.memory` is the module's `WebAssembly.Memory`, the heap. */
  wasm: { asm: { memory: object } };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  disposeData(dataId: object): void;
}

/** The exports of `decode.wat`, inference's and training's kernels alike (pointers are byte offsets into the heap). */
export interface DecodeExports {
  attend(
    qkv: number,
    k: number,
    v: number,
    bias: number,
    y: number,
    probs: number,
    rows: number,
    heads: number,
    headDim: number,
    capacity: number,
    columns: number,
    scale: number,
  ): void;
  gelu(x: number, out: number, size: number, cube: number, linear: number): void;
  layerNorm(x: number, gain: number, bias: number, out: number, rows: number, width: number, eps: number): void;
  embed(wte: number, wpe: number, tokens: number, positions: number, out: number, rows: number, width: number): void;
  addInPlace(x: number, delta: number, size: number): void;
  attendCausal(
    qkv: number,
    k: number,
    v: number,
    y: number,
    probs: number,
    pOut: number,
    batch: number,
    seqLen: number,
    heads: number,
    headDim: number,
    scale: number,
  ): void;
  columnSum(x: number, out: number, rows: number, width: number): void;
  geluGrad(x: number, s: number, dy: number, dx: number, size: number, cube: number, linear: number): void;
  /** Returns 1 when every value written is finite, else 0. */
  adamw(
    w: number,
    g: number,
    m: number,
    v: number,
    outW: number,
    outM: number,
    outV: number,
    size: number,
    ...scalars: number[]
  ): number;
  exp(x: number, out: number, size: number): void;
  attendCausalGrad(
    qkv: number,
    k: number,
    v: number,
    p: number,
    dy: number,
    dqkv: number,
    scratch: number,
    batch: number,
    seqLen: number,
    heads: number,
    headDim: number,
    scale: number,
  ): void;
}

/** Name of the attention kernel registered by {@link installDecodeKernels}. */
export const DECODE_ATTENTION_KERNEL = "ArclightDecodeAttention";
/** The causal attention kernel: y, k, v of a [B·T, 3C] projection, plus the softmax [B, H, T, T] with `keepSoftmax`. */
export const CAUSAL_ATTENTION_KERNEL = "ArclightCausalAttention";

/** Attributes of {@link CAUSAL_ATTENTION_KERNEL}: rows B, positions T, heads H, and whether to output the softmax. */
export interface CausalAttentionAttrs {
  batch: number;
  seqLen: number;
  heads: number;
  keepSoftmax?: boolean;
}
/** Name of the GELU kernel registered by {@link installDecodeKernels}. */
export const GELU_KERNEL = "ArclightGelu";

const instances = new WeakMap<object, DecodeExports>();

/** `decode.wat` instantiated over the backend's heap (once per heap). */
export function decodeKernelsOn(backend: object): DecodeExports {
  const memory = (backend as WasmBackendInternals).wasm.asm.memory;
  let found = instances.get(memory);
  if (!found) {
    const module = new wasmApi.Module(Buffer.from(WASM_BASE64, "base64"));
    found = new wasmApi.Instance(module, { env: { memory } }).exports as unknown as DecodeExports;
    instances.set(memory, found);
  }
  return found;
}

/** Byte offset of a tensor's buffer in the heap (stable as the heap grows). */
export function heapOffset(backend: Pick<WasmBackendInternals, "dataIdMap">, t: tf.TensorInfo): number {
  return backend.dataIdMap.get(t.dataId).memoryOffset;
}

/** Scratch floats for `width` columns: the scores rounded up to 4, then each probability splat across 4 lanes. */
export function attendScratchFloats(width: number): number {
  return 5 * Math.ceil(width / 4) * 4;
}

/** Runs `use` with a heap scratch buffer of `floats` floats, freed afterwards. */
export function withScratch(
  backend: Pick<WasmBackendInternals, "dataIdMap" | "makeOutput" | "disposeData">,
  floats: number,
  use: (offset: number) => void,
): void {
  const scratch = backend.makeOutput([floats], "float32");
  try {
    use(heapOffset(backend, scratch));
  } finally {
    backend.disposeData(scratch.dataId);
  }
}

/** Registers `kernelFunc` as wasm kernel `name` unless one is registered (idempotent). */
export function registerWasmKernel<Backend = WasmBackendInternals>(
  name: string,
  kernelFunc: (
    inputs: tf.NamedTensorInfoMap,
    attrs: tf.NamedAttrMap,
    backend: Backend,
  ) => tf.TensorInfo | tf.TensorInfo[],
): void {
  if (tf.getKernel(name, "wasm")) return;
  tf.registerKernel({
    kernelName: name,
    backendName: "wasm",
    kernelFunc: (args) => kernelFunc(args.inputs, args.attrs ?? {}, args.backend as unknown as Backend),
  });
}

/** Registers the decode attention, causal attention and GELU kernels; idempotent. */
export function installDecodeKernels(): void {
  registerWasmKernel(DECODE_ATTENTION_KERNEL, (inputs, attrs, backend) => {
    const { qkv, k, v, bias } = inputs as Record<"qkv" | "k" | "v" | "bias", tf.TensorInfo>;
    const { columns } = attrs as { columns: number };
    const [rows, heads, capacity, headDim] = k.shape as [number, number, number, number];
    const y = backend.makeOutput([rows, heads * headDim], "float32");
    withScratch(backend, attendScratchFloats(columns + 1), (scratch) =>
      decodeKernelsOn(backend).attend(
        heapOffset(backend, qkv),
        heapOffset(backend, k),
        heapOffset(backend, v),
        heapOffset(backend, bias),
        heapOffset(backend, y),
        scratch,
        rows,
        heads,
        headDim,
        capacity,
        columns,
        1 / Math.sqrt(headDim),
      ),
    );
    return y;
  });
  registerWasmKernel(CAUSAL_ATTENTION_KERNEL, (inputs, attrs, backend) => {
    const qkv = inputs.qkv as tf.TensorInfo;
    const { batch, seqLen, heads, keepSoftmax } = attrs as unknown as CausalAttentionAttrs;
    const headDim = (qkv.shape[1] as number) / (3 * heads);
    const y = backend.makeOutput([batch * seqLen, heads * headDim], "float32");
    const k = backend.makeOutput([batch, heads, seqLen, headDim], "float32");
    const v = backend.makeOutput([batch, heads, seqLen, headDim], "float32");
    const p = keepSoftmax ? backend.makeOutput([batch, heads, seqLen, seqLen], "float32") : undefined;
    withScratch(backend, attendScratchFloats(seqLen), (scratch) =>
      decodeKernelsOn(backend).attendCausal(
        heapOffset(backend, qkv),
        heapOffset(backend, k),
        heapOffset(backend, v),
        heapOffset(backend, y),
        scratch,
        p ? heapOffset(backend, p) : 0,
        batch,
        seqLen,
        heads,
        headDim,
        1 / Math.sqrt(headDim),
      ),
    );
    return p ? [y, k, v, p] : [y, k, v];
  });
  registerWasmKernel(GELU_KERNEL, (inputs, _attrs, backend) => {
    const x = inputs.x as tf.TensorInfo;
    const out = backend.makeOutput(x.shape, "float32");
    const size = tf.util.sizeFromShape(x.shape);
    decodeKernelsOn(backend).gelu(heapOffset(backend, x), heapOffset(backend, out), size, GELU_CUBE, GELU_LINEAR);
    return out;
  });
}

/**
 * One decode step's attention as a tfjs op: writes this step's key and value into column `columns` of `cache` **in
 * place** (its owner must hold the only reference), then softmax(q·kᵀ/√headDim + bias)·v, y [B, C].
 * @param bias_B_L1 - B × (L+1) floats: 0 where a row sees the column, -1e9 where not
 * @throws {RangeError} when the cache has no free column or the shapes disagree
 */
export function decodeAttention(
  qkv: tf.Tensor2D,
  cache: { k: tf.Tensor4D; v: tf.Tensor4D },
  columns: number,
  bias_B_L1: tf.Tensor,
): tf.Tensor2D {
  const [rows, heads, capacity, headDim] = cache.k.shape;
  if (columns >= capacity) throw new RangeError(`decode attention: ${columns} columns fill a capacity of ${capacity}`);
  const fits =
    qkv.shape[0] === rows &&
    qkv.shape[1] === 3 * heads * headDim &&
    tf.util.arraysEqual(cache.v.shape, cache.k.shape) &&
    bias_B_L1.size === rows * (columns + 1);
  if (!fits)
    throw new RangeError(
      `decode attention: qkv [${qkv.shape}], k [${cache.k.shape}], v [${cache.v.shape}] and bias of ${bias_B_L1.size} values for ${columns} columns disagree`,
    );
  return tf
    .engine()
    .runKernel(DECODE_ATTENTION_KERNEL, { qkv, k: cache.k, v: cache.v, bias: bias_B_L1 }, { columns }) as tf.Tensor2D;
}

/**
 * Causal multi-head attention over qkv [B·T, 3C] in one dispatch; y [B·T, C] plus keys and values [B, H, T, headDim].
 * @throws {RangeError} when `qkv`'s shape does not fit B, T and H
 */
export function causalAttention(
  qkv: tf.Tensor2D,
  batch: number,
  seqLen: number,
  heads: number,
): { y: tf.Tensor2D; k: tf.Tensor4D; v: tf.Tensor4D } {
  if (qkv.shape[0] !== batch * seqLen || qkv.shape[1] % (3 * heads) !== 0)
    throw new RangeError(
      `causal attention: qkv [${qkv.shape}] does not fit ${batch} rows × ${seqLen} × ${heads} heads`,
    );
  const [y, k, v] = tf.engine().runKernel(CAUSAL_ATTENTION_KERNEL, { qkv }, { batch, seqLen, heads }) as [
    tf.Tensor2D,
    tf.Tensor4D,
    tf.Tensor4D,
  ];
  return { y, k, v };
}

/** Whether {@link geluInference} takes `x` (its vector loop needs a size that is a multiple of 4). */
export function geluKernelFits(x: tf.Tensor): boolean {
  return x.size % 4 === 0;
}

/** Forward-only GELU via {@link GELU_KERNEL}; size a multiple of 4. @see Hendrycks & Gimpel, arXiv:1606.08415 */
export function geluInference(x: tf.Tensor): tf.Tensor {
  return tf.engine().runKernel(GELU_KERNEL, { x }, {}) as tf.Tensor;
}
