/**
 * @module Tests of training's fused causal attention: its output and its gradient with respect to the [N, 3C]
 * projection equal the tfjs-op reference (split heads, q·kᵀ, scale, causal mask, softmax, ·v, merge) for one
 * position, odd lengths, several rows and heads, head sizes 4 to 32 and saturated scores; the softmax it keeps is the
 * masked softmax with zeros above the diagonal; a second call over reused heap memory gives the same values; shapes
 * the kernels do not take are declined or refused; nothing leaks.
 */
import * as tf from "@tensorflow/tfjs";
import { beforeAll, describe, expect, it } from "vitest";
import { relativeError } from "../../testing/relative-error.js";
import { initWasmBackend } from "./backend.js";
import { causalBias } from "./ops.js";
import { attentionFused, attentionKernelFits } from "./wasm-attention.js";
import { CAUSAL_ATTENTION_KERNEL } from "./wasm-decode.js";

/** The reference path's attention (model.ts without the kernels): y [B*T, C] from qkv [B*T, 3C]. */
function referenceAttention(qkv: tf.Tensor2D, batch: number, seqLen: number, heads: number): tf.Tensor2D {
  const c = qkv.shape[1] / 3;
  const headDim = c / heads;
  const [q, k, v] = tf
    .split(qkv, 3, 1)
    .map((t) => tf.transpose(tf.reshape(t, [batch, seqLen, heads, headDim]), [0, 2, 1, 3]) as tf.Tensor4D);
  const scores = tf.add(tf.mul(tf.matMul(q!, k!, false, true), 1 / Math.sqrt(headDim)), causalBias(seqLen));
  const y = tf.matMul(tf.softmax(scores), v!);
  return tf.reshape(tf.transpose(y, [0, 2, 1, 3]), [batch * seqLen, c]) as tf.Tensor2D;
}

/**
 * Causal attention and its gradient in float64, loop by loop from the definitions: y = P·v with P = softmax(q·kᵀ·s)
 * over columns 0..t; dP = dy·vᵀ, dS = P ⊙ (dP − rowsum(P ⊙ dP)), dq = s·dS·k, dk = s·dSᵀ·q, dv = Pᵀ·dy.
 */
function attentionFloat64(
  qkv: ArrayLike<number>,
  dy: ArrayLike<number>,
  batch: number,
  seqLen: number,
  heads: number,
): { y: Float64Array; grad: Float64Array } {
  const width = qkv.length / (batch * seqLen);
  const c = width / 3;
  const hd = c / heads;
  const s = 1 / Math.sqrt(hd);
  const y = new Float64Array(batch * seqLen * c);
  const grad = new Float64Array(qkv.length);
  const at = (b: number, t: number, part: number, h: number, d: number): number =>
    (b * seqLen + t) * width + part * c + h * hd + d;
  for (let b = 0; b < batch; b++)
    for (let h = 0; h < heads; h++)
      for (let i = 0; i < seqLen; i++) {
        const scores = Array.from({ length: i + 1 }, (_, j) => {
          let dot = 0;
          for (let d = 0; d < hd; d++) dot += qkv[at(b, i, 0, h, d)]! * qkv[at(b, j, 1, h, d)]!;
          return dot * s;
        });
        const max = Math.max(...scores);
        const e = scores.map((x) => Math.exp(x - max));
        const sum = e.reduce((a, x) => a + x, 0);
        const p = e.map((x) => x / sum);
        const g = (d: number): number => dy[(b * seqLen + i) * c + h * hd + d]!;
        const dp = p.map((_, j) => {
          let dot = 0;
          for (let d = 0; d < hd; d++) dot += g(d) * qkv[at(b, j, 2, h, d)]!;
          return dot;
        });
        const rowDot = p.reduce((a, pj, j) => a + pj * dp[j]!, 0);
        for (let j = 0; j <= i; j++) {
          const ds = p[j]! * (dp[j]! - rowDot);
          for (let d = 0; d < hd; d++) {
            y[(b * seqLen + i) * c + h * hd + d]! += p[j]! * qkv[at(b, j, 2, h, d)]!;
            grad[at(b, i, 0, h, d)]! += s * ds * qkv[at(b, j, 1, h, d)]!;
            grad[at(b, j, 1, h, d)]! += s * ds * qkv[at(b, i, 0, h, d)]!;
            grad[at(b, j, 2, h, d)]! += p[j]! * g(d);
          }
        }
      }
  return { y, grad };
}

/** y and dL/dqkv of L = Σ y·dy through `attend`. */
function valueAndGrad(
  attend: (qkv: tf.Tensor2D) => tf.Tensor2D,
  qkv: tf.Tensor2D,
  dy: tf.Tensor,
): { y: Float32Array; grad: Float32Array } {
  return tf.tidy(() => {
    const { value, grad } = tf.valueAndGrad((x: tf.Tensor) => tf.sum(tf.mul(attend(x as tf.Tensor2D), dy)))(qkv);
    value.dispose();
    return { y: attend(qkv).dataSync() as Float32Array, grad: grad.dataSync() as Float32Array };
  });
}

describe("fused causal attention for training", () => {
  beforeAll(() => initWasmBackend());

  it("equals the tfjs-op reference, output and gradient, over rows, heads, head sizes and odd lengths", () => {
    for (const [batch, seqLen, c, heads] of [
      [1, 1, 4, 1],
      [1, 5, 4, 1],
      [2, 5, 8, 2],
      [4, 17, 32, 2],
      [3, 33, 96, 3],
      [2, 128, 128, 4],
    ] as const) {
      const seed = batch * 1000 + seqLen * 10 + heads;
      const qkv = tf.randomNormal([batch * seqLen, 3 * c], 0, 1, "float32", seed) as tf.Tensor2D;
      const dy = tf.randomNormal([batch * seqLen, c], 0, 1, "float32", seed + 1);
      const before = tf.memory().numTensors;
      const fused = valueAndGrad((x) => attentionFused(x, batch, seqLen, heads), qkv, dy);
      expect(tf.memory().numTensors).toBe(before);
      const reference = valueAndGrad((x) => referenceAttention(x, batch, seqLen, heads), qkv, dy);
      const shape = `B ${batch} T ${seqLen} C ${c} H ${heads}`;
      expect(relativeError(fused.y, reference.y), shape).toBeLessThan(2e-6);
      expect(relativeError(fused.grad, reference.grad), shape).toBeLessThan(2e-5);
      tf.dispose([qkv, dy]);
    }
  });

  it("stays finite and as close to float64 as the tfjs ops when the scores saturate the softmax", () => {
    const [batch, seqLen, c, heads] = [2, 24, 32, 2];
    const qkv = tf.mul(tf.randomNormal([batch * seqLen, 3 * c], 0, 1, "float32", 5), 40) as tf.Tensor2D;
    const dy = tf.randomNormal([batch * seqLen, c], 0, 1, "float32", 6);
    const fused = valueAndGrad((x) => attentionFused(x, batch, seqLen, heads), qkv, dy);
    const ops = valueAndGrad((x) => referenceAttention(x, batch, seqLen, heads), qkv, dy);
    const exact = attentionFloat64(qkv.dataSync(), dy.dataSync(), batch, seqLen, heads);
    expect(fused.grad.every(Number.isFinite)).toBe(true);
    expect(relativeError(fused.y, exact.y)).toBeLessThan(1e-5);
    expect(relativeError(fused.grad, exact.grad)).toBeLessThan(Math.max(1e-5, 2 * relativeError(ops.grad, exact.grad)));
  });

  it("keeps the masked softmax, zeros above the diagonal, even where the heap held other values", () => {
    const [batch, seqLen, c, heads] = [2, 7, 16, 2];
    tf.tidy(() => tf.fill([4096], 7).dataSync()); // leave non-zero floats in freed heap memory
    const qkv = tf.randomNormal([batch * seqLen, 3 * c], 0, 1, "float32", 9) as tf.Tensor2D;
    const outputs = tf
      .engine()
      .runKernel(CAUSAL_ATTENTION_KERNEL, { qkv }, { batch, seqLen, heads, keepSoftmax: true }) as tf.Tensor[];
    const p = outputs[3]!;
    expect(p.shape).toEqual([batch, heads, seqLen, seqLen]);
    const headDim = c / heads;
    const expected = tf.tidy(() => {
      const [q, k] = tf
        .split(qkv, 3, 1)
        .map((t) => tf.transpose(tf.reshape(t, [batch, seqLen, heads, headDim]), [0, 2, 1, 3]));
      return tf.softmax(tf.add(tf.mul(tf.matMul(q!, k!, false, true), 1 / Math.sqrt(headDim)), causalBias(seqLen)));
    });
    const values = p.dataSync();
    expect(relativeError(values, expected.dataSync())).toBeLessThan(1e-6);
    for (let row = 0; row < batch * heads * seqLen; row++)
      for (let column = (row % seqLen) + 1; column < seqLen; column++) expect(values[row * seqLen + column]).toBe(0);
    tf.dispose([...outputs, qkv, expected]);
  });

  it("gives the same gradient on a second call, whose buffers reuse the first call's heap memory", () => {
    const [batch, seqLen, c, heads] = [3, 19, 64, 2];
    const qkv = tf.randomNormal([batch * seqLen, 3 * c], 0, 1, "float32", 11) as tf.Tensor2D;
    const dy = tf.randomNormal([batch * seqLen, c], 0, 1, "float32", 12);
    const first = valueAndGrad((x) => attentionFused(x, batch, seqLen, heads), qkv, dy);
    const other = tf.randomNormal([batch * seqLen, 3 * c], 0, 1, "float32", 13) as tf.Tensor2D;
    valueAndGrad((x) => attentionFused(x, batch, seqLen, heads), other, dy);
    const second = valueAndGrad((x) => attentionFused(x, batch, seqLen, heads), qkv, dy);
    expect([...second.grad]).toEqual([...first.grad]);
    expect([...second.y]).toEqual([...first.y]);
  });

  it("declines head sizes that are not a multiple of 4 and non-float input, and refuses a qkv that does not fit", () => {
    expect(attentionKernelFits(tf.zeros([8, 96]) as tf.Tensor2D, 4)).toBe(true); // head size 8
    expect(attentionKernelFits(tf.zeros([8, 18]) as tf.Tensor2D, 1)).toBe(false); // head size 6
    expect(attentionKernelFits(tf.zeros([8, 96]) as tf.Tensor2D, 5)).toBe(false); // 96 is not 3 × 5 × headDim
    expect(attentionKernelFits(tf.zeros([8, 96], "int32") as tf.Tensor2D, 4)).toBe(false);
    expect(() => attentionFused(tf.zeros([10, 96]) as tf.Tensor2D, 2, 4, 4)).toThrow(RangeError);
    expect(() => attentionFused(tf.zeros([8, 96]) as tf.Tensor2D, 2, 4, 5)).toThrow(/does not fit/);
  });
});
