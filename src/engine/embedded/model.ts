/**
 * @module The embedded GPT: pre-LN decoder-only transformer (GELU MLP, learned positions, untied head).
 * @see Radford et al., "Language Models are Unsupervised Multitask Learners" (GPT-2), 2019
 */
import * as tf from "@tensorflow/tfjs";
import type { ModelConfig } from "./config.js";
import { DecodeStepRunner } from "./decode-step.js";
import { causalBias, gelu, layerNorm, linear } from "./ops.js";
import { type BlockParams, buildParams, type GptParams, paramSpecs } from "./params.js";
import { attentionFused, attentionKernelFits } from "./wasm-attention.js";
import { causalAttention, geluInference, geluKernelFits } from "./wasm-decode.js";
import { embedFused, geluFused, layerNormFused, linearBias } from "./wasm-fused.js";
import { layerNormInference } from "./wasm-layer-norm.js";
import { affine } from "./wasm-matmul.js";

/** Keys and values of one layer for a batch, [B, H, L, C/H]. */
export type LayerKv = {
  k: tf.Tensor4D;
  v: tf.Tensor4D;
};

/** Output of a full forward pass (a type alias so `tf.tidy` accepts it). */
export type ForwardOutput = {
  /** Next-token logits at every position, [B*T, V] (row b*T + t). */
  logits: tf.Tensor2D;
  /** Per-layer keys/values, [B, H, T, C/H]; empty unless requested. */
  kv: LayerKv[];
};

/** How to run {@link Gpt.forward}. */
export interface ForwardOptions {
  /** Also return every layer's keys and values (for prefill). */
  returnKv?: boolean;
  /**
   * Forward-only kernels (gather embedding, fused matmul + bias): fewer ops, no gradient. Training must leave it off.
   */
  inference?: boolean;
  /** Train through unfused tfjs ops: the numerics reference the fused kernels are compared with. */
  reference?: boolean;
}

/** Which kernels a forward pass runs: forward-only (inference), fused with gradients (training), or the reference. */
type Path = "inference" | "fused" | "reference";

function pathOf(options: ForwardOptions): Path {
  return options.inference ? "inference" : options.reference ? "reference" : "fused";
}

/** x @ w + b, [N, M]: {@link affine} for inference, {@link linearBias} for training, unfused on the reference path. */
function project(x: tf.Tensor, w: tf.Tensor, b: tf.Tensor, path: Path): tf.Tensor2D {
  if (path === "inference") return affine(x as tf.Tensor2D, w as tf.Tensor2D, b as tf.Tensor1D);
  if (path === "fused") return linearBias(x, w, b);
  return tf.add(linear(x, w), b) as tf.Tensor2D;
}

/** Layer norm: the SIMD kernel for inference, the fused op for training, the nine ops on the reference path. */
function norm(x: tf.Tensor2D, gain: tf.Tensor, bias: tf.Tensor, path: Path): tf.Tensor2D {
  if (path === "inference") return layerNormInference(x, gain, bias);
  return path === "fused" ? layerNormFused(x, gain, bias) : layerNorm(x, gain, bias);
}

/** GELU: the six reference ops, the fused differentiable op for training, the forward-only kernel for inference. */
function activate(x: tf.Tensor2D, path: Path): tf.Tensor {
  if (path === "reference") return gelu(x);
  return path === "inference" && geluKernelFits(x) ? geluInference(x) : geluFused(x);
}

/** The GPT: weights plus the two forward passes. Tensors returned by its methods belong to the caller. */
export class Gpt {
  /** The model shape. */
  readonly config: ModelConfig;
  /** The weights grouped per block, as the forward passes read them. */
  readonly params: GptParams;
  /** Weights by checkpoint name, in {@link paramSpecs} order. */
  readonly byName: Map<string, tf.Variable>;
  private readonly masks = new Map<number, tf.Tensor2D>();
  /** The decode step's heap buffers, made at the first step. */
  private runner: DecodeStepRunner | undefined;

  /** @throws {RangeError} when a weight is missing or mis-sized */
  constructor(config: ModelConfig, values: Map<string, Float32Array>) {
    this.config = config;
    const built = buildParams(config, values);
    this.params = built.params;
    this.byName = built.byName;
  }

  /** Overwrites weights (held tensors unaffected). @throws {RangeError} on a bad name or size, earlier ones assigned */
  assignWeights(weights: Iterable<readonly [string, Float32Array]>): void {
    for (const [name, values] of weights) {
      const variable = this.byName.get(name);
      if (variable === undefined) throw new RangeError(`unknown weight ${name}`);
      if (values.length !== variable.size)
        throw new RangeError(`weight ${name} has ${values.length} values, expected ${variable.size}`);
      const tensor = tf.tensor(values, variable.shape, "float32");
      variable.assign(tensor);
      tensor.dispose();
    }
  }

  /** Fresh copies of every weight (transferable), in {@link Gpt.byName} order. */
  readWeights(): [string, Float32Array][] {
    return [...this.byName].map(([name, variable]) => [name, variable.dataSync() as Float32Array]);
  }

  /** Trainable weights in {@link paramSpecs} order. */
  variables(): tf.Variable[] {
    return [...this.byName.values()];
  }

  /** Number of scalar weights. */
  parameterCount(): number {
    return paramSpecs(this.config).reduce((n, s) => n + s.shape.reduce((a, b) => a * b, 1), 0);
  }

  /**
   * Full causal forward pass (differentiable unless `inference`), logits [B*T, V] and optionally each layer's KV.
   * @param tokenIds_B_T - int32 [B, T], T <= context
   */
  forward(tokenIds_B_T: tf.Tensor2D, options: ForwardOptions = {}): ForwardOutput {
    const { returnKv = false } = options;
    const path = pathOf(options);
    const inference = path === "inference";
    const [batch, seqLen] = tokenIds_B_T.shape;
    const { vocab, d_model: c } = this.config;
    const flat = tf.reshape(tokenIds_B_T, [batch * seqLen]) as tf.Tensor1D; // [B*T]
    const tokens = // [B*T, C]
      path === "inference"
        ? tf.gather(this.params.tokenEmbedding, flat)
        : path === "fused"
          ? embedFused(flat, this.params.tokenEmbedding as tf.Tensor2D)
          : linear(tf.oneHot(flat, vocab).toFloat() as tf.Tensor2D, this.params.tokenEmbedding);
    const positions = tf.slice(this.params.positionEmbedding, [0, 0], [seqLen, c]); // [T, C]
    let x = tf.reshape(tf.add(tf.reshape(tokens, [batch, seqLen, c]), positions), [batch * seqLen, c]) as tf.Tensor2D;
    const kv: LayerKv[] = [];
    const mask = inference ? undefined : this.causalMask(seqLen);
    const layer = (input: tf.Tensor2D, block: BlockParams): { x: tf.Tensor2D; k?: tf.Tensor4D; v?: tf.Tensor4D } => {
      const h = norm(input, block.ln1Gain, block.ln1Bias, path);
      const qkv = project(h, block.qkvWeight, block.qkvBias, path); // [B*T, 3C]
      if (inference) {
        const { y, k, v } = causalAttention(qkv, batch, seqLen, this.config.n_heads); // [B*T, C]; [B, H, T, C/H]
        return { x: this.residual(input, y, block, path), k, v };
      }
      if (path === "fused" && !returnKv && attentionKernelFits(qkv, this.config.n_heads)) {
        const y = attentionFused(qkv, batch, seqLen, this.config.n_heads); // [B*T, C]
        return { x: this.residual(input, y, block, path) };
      }
      const [q, k, v] = this.splitHeads(qkv, batch, seqLen); // each [B, H, T, C/H]
      const scores = tf.add(tf.mul(tf.matMul(q, k, false, true), this.scale()), mask!); // [B, H, T, T]
      const y = tf.matMul(tf.softmax(scores), v); // [B, H, T, C/H]
      const merged = tf.reshape(tf.transpose(y, [0, 2, 1, 3]), [batch * seqLen, c]) as tf.Tensor2D; // [B*T, C]
      return { x: this.residual(input, merged, block, path), k, v };
    };
    for (const block of this.params.blocks) {
      // Inference frees each layer's intermediates (the [B, H, T, T] scores above all) as soon as the layer is done,
      // instead of at the end of the caller's scope: the peak heap is one layer's worth, not all of them.
      const out = inference ? tf.tidy(() => layer(x, block)) : layer(x, block);
      if (inference) x.dispose();
      x = out.x;
      if (returnKv) kv.push({ k: out.k!, v: out.v! });
      else if (inference) tf.dispose([out.k!, out.v!]);
    }
    return { logits: this.head(x, path), kv };
  }

  /**
   * One decode step over a column-padded shared cache (`decode-step.ts`); writes each layer's new key and value into
   * column `columns` in place.
   * @param bias_B_L1 - [B × (L+1)]: 0 for visible columns, -1e9 for hidden ones
   * @returns logits [B × V], row-major
   * @throws {RangeError} when the cache has no free column or the sizes disagree
   */
  decodeStep(
    tokenIds_B: Int32Array,
    positions_B: Int32Array,
    cache: LayerKv[],
    columns: number,
    bias_B_L1: Float32Array,
  ): Float32Array {
    const rows = tokenIds_B.length;
    const capacity = cache[0]?.k.shape[2] ?? 0;
    if (columns >= capacity) throw new RangeError(`decode step: ${columns} columns fill a capacity of ${capacity}`);
    const fits =
      positions_B.length === rows &&
      bias_B_L1.length === rows * (columns + 1) &&
      cache.length === this.config.n_layers &&
      cache.every((layer) => layer.k.shape[0] === rows && layer.v.shape[0] === rows);
    if (!fits)
      throw new RangeError(
        `decode step: ${rows} tokens, ${positions_B.length} positions, a bias of ${bias_B_L1.length} values for ` +
          `${columns} columns and a cache of ${cache.length} layers × ${cache[0]?.k.shape[0]} rows disagree`,
      );
    this.runner ??= new DecodeStepRunner(this.params, {
      c: this.config.d_model,
      heads: this.config.n_heads,
      vocab: this.config.vocab,
    });
    return this.runner.step(tokenIds_B, positions_B, cache, columns, bias_B_L1);
  }

  /** Frees the weights and cached masks. */
  dispose(): void {
    this.runner?.dispose();
    this.runner = undefined;
    for (const v of this.byName.values()) v.dispose();
    for (const m of this.masks.values()) m.dispose();
    this.masks.clear();
  }

  /** q, k, v of a [B*T, 3C] projection, each [B, H, T, C/H]. */
  private splitHeads(qkv: tf.Tensor2D, batch: number, seqLen: number): [tf.Tensor4D, tf.Tensor4D, tf.Tensor4D] {
    const heads = this.config.n_heads;
    const headDim = this.config.d_model / heads;
    const [q, k, v] = tf.split(qkv, 3, 1).map(
      (t) => tf.transpose(tf.reshape(t, [batch, seqLen, heads, headDim]), [0, 2, 1, 3]) as tf.Tensor4D, // [B, H, T, C/H]
    );
    return [q!, k!, v!];
  }

  /** x + proj(attn) then x + mlp(ln2(x)), both [N, C]. */
  private residual(x: tf.Tensor2D, attended: tf.Tensor2D, block: BlockParams, path: Path): tf.Tensor2D {
    const afterAttn = tf.add(x, project(attended, block.outWeight, block.outBias, path)) as tf.Tensor2D;
    const h = norm(afterAttn, block.ln2Gain, block.ln2Bias, path);
    const up = activate(project(h, block.upWeight, block.upBias, path), path); // [N, 4C]
    return tf.add(afterAttn, project(up, block.downWeight, block.downBias, path)) as tf.Tensor2D;
  }

  /** Final norm and untied head: [N, C] → [N, V]. */
  private head(x: tf.Tensor2D, path: Path): tf.Tensor2D {
    const normed = norm(x, this.params.lnfGain, this.params.lnfBias, path);
    return path === "inference" ? affine(normed, this.params.head as tf.Tensor2D) : linear(normed, this.params.head);
  }

  private scale(): number {
    return 1 / Math.sqrt(this.config.d_model / this.config.n_heads);
  }

  private causalMask(seqLen: number): tf.Tensor2D {
    let mask = this.masks.get(seqLen);
    if (!mask) {
      mask = causalBias(seqLen);
      this.masks.set(seqLen, mask);
    }
    return mask;
  }
}
