/**
 * @module One decode step straight on tfjs's wasm heap, without tfjs tensors: `wasm/gemm.wat` (or XNNPACK) for the
 * products, `wasm/decode.wat` for the rest. Same kernels in the same order as the tfjs-op path, so the same numbers,
 * minus tfjs's per-op bookkeeping.
 */
import * as tf from "@tensorflow/tfjs";
import { GELU_CUBE, GELU_LINEAR } from "./ops.js";
import type { GptParams } from "./params.js";
import { attendScratchFloats, type DecodeExports, decodeKernelsOn } from "./wasm-decode.js";
import { type GemmExports, gemmAvailable, gemmKernelsOn, packedFloats } from "./wasm-gemm.js";

/** The parts of tfjs-backend-wasm's `BackendWasm` (4.22) this module uses. */
interface WasmBackendInternals {
  wasm: {
    HEAPF32: Float32Array;
    HEAP32: Int32Array;
    _malloc(bytes: number): number;
    _free(offset: number): void;
    asm: { _FusedMatMul: (...args: number[]) => void; memory: object };
    tfjs: { registerTensor(id: number, size: number, memoryOffset: number): void; disposeData(id: number): void };
  };
  dataIdMap: { get(dataId: object): { id: number; memoryOffset: number } };
  dataIdNextNumber: number;
}

/** ε of every layer norm, as in `ops.ts`. */
const EPSILON = 1e-5;

/** One layer's cached keys and values, [B, H, capacity, C/H] (the model's `LayerKv`). */
interface CachedLayer {
  k: tf.Tensor4D;
  v: tf.Tensor4D;
}

/** A heap buffer registered as a wasm tensor id (so `_FusedMatMul` can read or write it). */
interface HeapBuffer {
  id: number;
  offset: number;
}

/** A heap buffer only `decode.wat` reads or writes (by byte offset), and its size in floats. */
interface Scratch {
  offset: number;
  floats: number;
}

/** The shape of the model a runner serves: d_model, heads, vocabulary. */
interface Shape {
  c: number;
  heads: number;
  vocab: number;
}

/** Runs decode steps of one model; owns its heap buffers until {@link DecodeStepRunner.dispose}. */
export class DecodeStepRunner {
  private readonly backend: WasmBackendInternals;
  private readonly kernels: DecodeExports;
  private readonly shape: Shape;
  /** Rows the activation buffers hold. */
  private rows = 0;
  private buffers: Record<"x" | "h" | "qkv" | "y" | "delta" | "up" | "logits" | "ids", HeapBuffer> | undefined;
  /** The attention bias of a step, [B × (L+1)] floats (only `decode.wat` reads it: no tensor id). */
  private readonly bias: Scratch = { offset: 0, floats: 0 };
  /** Byte offset of `_FusedMatMul`'s two shape arrays, [1, rows, K] then [1, K, N] (6 int32). */
  private readonly shapes: number;
  /** The attention kernel's scratch (see `attendScratchFloats`). */
  private readonly probs: Scratch = { offset: 0, floats: 0 };
  /** `gemm.wat` where relaxed SIMD is available (else the products run on XNNPACK). */
  private readonly gemm: GemmExports | undefined;
  /** Each weight packed for `gemm.wat`, valid while the weight's buffer is the one packed (an update assigns anew). */
  private readonly packs = new Map<tf.Tensor, { weight: object; bias: object | undefined; offset: number }>();

  constructor(
    private readonly params: GptParams,
    shape: Shape,
  ) {
    this.backend = tf.backend() as unknown as WasmBackendInternals;
    this.kernels = decodeKernelsOn(this.backend);
    this.shape = shape;
    this.shapes = this.backend.wasm._malloc(24);
    this.gemm = gemmAvailable() ? gemmKernelsOn(this.backend) : undefined;
  }

  /**
   * Embeds each row's last token, runs every layer (writing its key and value into column `columns` of `cache` in
   * place) and returns a copy of the logits, [B × V].
   * @param bias - [B × (L+1)]: 0 where a row sees a column, -1e9 where not
   */
  step(
    tokenIds: Int32Array,
    positions: Int32Array,
    cache: CachedLayer[],
    columns: number,
    bias: Float32Array,
  ): Float32Array {
    const rows = tokenIds.length;
    const { c, heads, vocab } = this.shape;
    const buffers = this.ensureRows(rows);
    this.reserve(this.bias, rows * (columns + 1));
    this.reserve(this.probs, attendScratchFloats(columns + 1));
    const { backend, kernels, params } = this;
    const at = (t: tf.Tensor): number => backend.dataIdMap.get(t.dataId).memoryOffset;
    backend.wasm.HEAP32.set(tokenIds, buffers.ids.offset / 4);
    backend.wasm.HEAP32.set(positions, buffers.ids.offset / 4 + rows);
    backend.wasm.HEAPF32.set(bias, this.bias.offset / 4);
    const x = buffers.x.offset;
    kernels.embed(
      at(params.tokenEmbedding),
      at(params.positionEmbedding),
      buffers.ids.offset,
      buffers.ids.offset + rows * 4,
      x,
      rows,
      c,
    );
    params.blocks.forEach((block, l) => {
      this.norm(x, block.ln1Gain, block.ln1Bias, rows);
      this.affine(buffers.h, block.qkvWeight, block.qkvBias, buffers.qkv, rows);
      const layer = cache[l]!;
      kernels.attend(
        buffers.qkv.offset,
        at(layer.k),
        at(layer.v),
        this.bias.offset,
        buffers.y.offset,
        this.probs.offset,
        rows,
        heads,
        c / heads,
        layer.k.shape[2],
        columns,
        1 / Math.sqrt(c / heads),
      );
      this.affine(buffers.y, block.outWeight, block.outBias, buffers.delta, rows);
      kernels.addInPlace(x, buffers.delta.offset, rows * c);
      this.norm(x, block.ln2Gain, block.ln2Bias, rows);
      this.affine(buffers.h, block.upWeight, block.upBias, buffers.up, rows);
      kernels.gelu(buffers.up.offset, buffers.up.offset, rows * 4 * c, GELU_CUBE, GELU_LINEAR);
      this.affine(buffers.up, block.downWeight, block.downBias, buffers.delta, rows);
      kernels.addInPlace(x, buffers.delta.offset, rows * c);
    });
    this.norm(x, params.lnfGain, params.lnfBias, rows);
    this.affine(buffers.h, params.head, undefined, buffers.logits, rows);
    const from = buffers.logits.offset / 4;
    return backend.wasm.HEAPF32.slice(from, from + rows * vocab);
  }

  /** Frees the buffers. */
  dispose(): void {
    this.freeRows();
    for (const scratch of [this.bias, this.probs]) if (scratch.floats > 0) this.backend.wasm._free(scratch.offset);
    this.backend.wasm._free(this.shapes);
    for (const pack of this.packs.values()) this.backend.wasm._free(pack.offset);
    this.packs.clear();
  }

  /** h = layerNorm(x) over `rows` rows. */
  private norm(x: number, gain: tf.Tensor, bias: tf.Tensor, rows: number): void {
    const at = (t: tf.Tensor): number => this.backend.dataIdMap.get(t.dataId).memoryOffset;
    this.kernels.layerNorm(x, at(gain), at(bias), this.buffers!.h.offset, rows, this.shape.c, EPSILON);
  }

  /** out = input @ w (+ b), input [rows, K], w [K, N]: `gemm.wat` on the packed weight, else XNNPACK. */
  private affine(input: HeapBuffer, w: tf.Tensor, b: tf.Tensor | undefined, out: HeapBuffer, rows: number): void {
    const [inner, cols] = w.shape as [number, number];
    if (this.gemm) {
      this.gemm.gemm(input.offset, inner * 4, 4, this.packed(w, b), out.offset, rows, inner, cols);
      return;
    }
    const heap = this.backend.wasm.HEAP32;
    const s = this.shapes / 4;
    heap[s] = 1;
    heap[s + 1] = rows;
    heap[s + 2] = inner;
    heap[s + 3] = 1;
    heap[s + 4] = inner;
    heap[s + 5] = cols;
    const id = (t: tf.Tensor): number => this.backend.dataIdMap.get(t.dataId).id;
    // (a, aShape, aRank, b, bShape, bRank, transposeA, transposeB, activation 0 = linear, bias, prelu, alpha, out)
    this.backend.wasm.asm._FusedMatMul(
      input.id,
      this.shapes,
      3,
      id(w),
      this.shapes + 12,
      3,
      0,
      0,
      0,
      b ? id(b) : 0,
      0,
      0,
      out.id,
    );
  }

  /** Byte offset of `w` and `b` packed for `gemm.wat`, packed again when either's buffer changed. */
  private packed(w: tf.Tensor, b: tf.Tensor | undefined): number {
    let pack = this.packs.get(w);
    if (pack && pack.weight === w.dataId && pack.bias === b?.dataId) return pack.offset;
    const [inner, cols] = w.shape as [number, number];
    pack ??= { weight: w.dataId, bias: b?.dataId, offset: this.backend.wasm._malloc(packedFloats(inner, cols) * 4) };
    Object.assign(pack, { weight: w.dataId, bias: b?.dataId });
    this.packs.set(w, pack);
    const at = (t: tf.Tensor): number => this.backend.dataIdMap.get(t.dataId).memoryOffset;
    this.gemm!.pack(at(w), cols * 4, 4, b ? at(b) : 0, pack.offset, inner, cols);
    return pack.offset;
  }

  /** The activation buffers, (re)allocated for at least `rows` rows. */
  private ensureRows(rows: number): NonNullable<DecodeStepRunner["buffers"]> {
    if (this.buffers && rows <= this.rows) return this.buffers;
    this.freeRows();
    const capacity = Math.max(rows, 2 * this.rows, 8);
    const { c, vocab } = this.shape;
    this.buffers = {
      x: this.alloc(capacity * c),
      h: this.alloc(capacity * c),
      qkv: this.alloc(capacity * 3 * c),
      y: this.alloc(capacity * c),
      delta: this.alloc(capacity * c),
      up: this.alloc(capacity * 4 * c),
      logits: this.alloc(capacity * vocab),
      ids: this.alloc(capacity * 2),
    };
    this.rows = capacity;
    return this.buffers;
  }

  /** Grows `scratch` (doubling) until it holds at least `floats` floats; its contents are not kept. */
  private reserve(scratch: Scratch, floats: number): void {
    if (floats <= scratch.floats) return;
    if (scratch.floats > 0) this.backend.wasm._free(scratch.offset);
    scratch.floats = Math.max(floats, 2 * scratch.floats);
    scratch.offset = this.backend.wasm._malloc(scratch.floats * 4) >>> 0;
  }

  private alloc(floats: number): HeapBuffer {
    const offset = this.backend.wasm._malloc(floats * 4) >>> 0;
    const id = this.backend.dataIdNextNumber++;
    this.backend.wasm.tfjs.registerTensor(id, floats, offset);
    return { id, offset };
  }

  private free(buffer: HeapBuffer): void {
    this.backend.wasm.tfjs.disposeData(buffer.id);
    this.backend.wasm._free(buffer.offset);
  }

  private freeRows(): void {
    if (!this.buffers) return;
    for (const buffer of Object.values(this.buffers)) this.free(buffer);
    this.buffers = undefined;
    this.rows = 0;
  }
}
