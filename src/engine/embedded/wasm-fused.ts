/**
 * @module Fused, differentiable ops for training on tfjs's wasm backend, each one tape entry with a hand-written
 * gradient in place of a chain of small ops: GELU (its input and σ(2u) kept instead of six intermediates, its
 * backward pass one wasm dispatch), `x @ w + b` (matmul + bias in one dispatch, no pre-bias product
 * kept) and layer norm (the normalised rows and their 1/σ kept; a backward pass of 11 ops instead of the ~30 that
 * autodiff records for the nine forward ops, two of which fill an all-ones [N, C] tensor in JavaScript). Bias and
 * gain gradients are column sums in one pass (`wasm-backward.ts`) instead of a transpose and a reduction. Keeping
 * fewer intermediates is what bounds the wasm heap during a train step: tfjs keeps every recorded op's inputs until
 * the backward pass ends, and the heap never shrinks once grown.
 */
import * as tf from "@tensorflow/tfjs";
import { GELU_CUBE, GELU_LINEAR, LAYER_NORM_EPSILON } from "./ops.js";
import { columnSum, geluGrad } from "./wasm-backward.js";
import { affine } from "./wasm-matmul.js";

/**
 * GELU (tanh approximation) as one op with its gradient: the same function as `ops.ts`'s {@link gelu}, within
 * float32 rounding. x and σ(2u) are kept for the backward pass instead of the six intermediates of `gelu`; on the
 * wasm backend the backward pass is one dispatch (`wasm-backward.ts`'s {@link geluGrad}). The forward pass stays on
 * tfjs ops: XNNPACK's sigmoid is faster than the `gelu` kernel of `wasm/decode.wat` at training sizes.
 * @param x - float32, any shape
 * @returns same shape
 * @see Hendrycks & Gimpel, "Gaussian Error Linear Units (GELUs)", arXiv:1606.08415
 */
export const geluFused = tf.customGrad((...inputs: (tf.Tensor | tf.GradSaveFunc)[]) => {
  const [x, save] = inputs as [tf.Tensor, tf.GradSaveFunc];
  const s = tf.tidy(() => tf.sigmoid(tf.mul(x, tf.add(tf.mul(tf.mul(x, x), GELU_CUBE), GELU_LINEAR)))); // σ(2u)
  save([x, s]);
  return {
    value: tf.mul(x, s),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [xs, ss] = saved as [tf.Tensor, tf.Tensor];
      return geluGrad(xs, ss, dy) ?? geluGradOps(xs, ss, dy);
    },
  };
}) as (x: tf.Tensor) => tf.Tensor;

/**
 * GELU's input gradient in tfjs ops: dx = dy·(s + x·s·(1 − s)·(2u)′) with s = σ(2u) and
 * (2u)′ = 3·GELU_CUBE·x² + GELU_LINEAR. The tidy frees the temporaries now, not when the whole backward pass ends.
 */
function geluGradOps(x: tf.Tensor, s: tf.Tensor, dy: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const slope = tf.add(tf.mul(tf.mul(x, x), 3 * GELU_CUBE), GELU_LINEAR);
    const sigmoidGrad = tf.mul(s, tf.sub(1, s));
    return tf.mul(dy, tf.add(s, tf.mul(tf.mul(x, sigmoidGrad), slope)));
  });
}

/**
 * `x @ w + b` as one op with its gradient: the forward pass is the matmul + bias of `installAffineKernel` (one
 * dispatch, and no pre-bias product on the tape); the backward pass's two products carry transpose flags, which
 * `wasm-matmul.ts`'s `BatchMatMul` reads through strides on the fused multiply-add kernel (`wasm-gemm.ts`) or, where
 * that is off, turns into explicit transposes for XNNPACK. Call `installAffineKernel` first (as `initWasmBackend`
 * does).
 * @param x - [N, K]
 * @param w - [K, M]
 * @param b - [M]
 * @returns [N, M]
 */
export const linearBias = tf.customGrad((...inputs: (tf.Tensor | tf.GradSaveFunc)[]) => {
  const [x, w, b, save] = inputs as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D, tf.GradSaveFunc];
  save([x, w]);
  return {
    value: affine(x, w, b),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [xs, ws] = saved as [tf.Tensor2D, tf.Tensor2D];
      // dL/dx = dy @ wᵀ: [N, M] @ [M, K]; dL/dw = xᵀ @ dy: [K, N] @ [N, M]; dL/db = Σ_rows dy: [M]
      return tf.tidy(() => [
        tf.matMul(dy as tf.Tensor2D, ws, false, true),
        tf.matMul(xs, dy as tf.Tensor2D, true, false),
        columnSum(dy as tf.Tensor2D),
      ]);
    },
  };
}) as (x: tf.Tensor, w: tf.Tensor, b: tf.Tensor) => tf.Tensor2D;

/**
 * Layer norm over the last axis with learned gain and bias as one op with its gradient: the same function as
 * `ops.ts`'s `layerNorm`, within float32 rounding. The backward pass, with x̂ the normalised rows, r = 1/σ and
 * g the gain: dg = Σ_rows dy·x̂, db = Σ_rows dy, and dx = r·(d − mean(d) − x̂·mean(d·x̂)) with d = dy·g.
 * @param x - [N, C]
 * @param gain - [C]
 * @param bias - [C]
 * @returns [N, C]
 * @see Ba, Kiros & Hinton, "Layer Normalization", arXiv:1607.06450
 */
export const layerNormFused = tf.customGrad((...inputs: (tf.Tensor | tf.GradSaveFunc)[]) => {
  const [x, gain, bias, save] = inputs as [tf.Tensor2D, tf.Tensor1D, tf.Tensor1D, tf.GradSaveFunc];
  const [normed, inverseStd] = tf.tidy(() => {
    const centered = tf.sub(x, tf.mean(x, -1, true)); // [N, C]
    const r = tf.rsqrt(tf.add(tf.mean(tf.square(centered), -1, true), LAYER_NORM_EPSILON)); // [N, 1]
    return [tf.mul(centered, r), r];
  });
  save([normed, inverseStd, gain]);
  return {
    value: tf.add(tf.mul(normed, gain), bias),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [xHat, r, g] = saved as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D];
      return tf.tidy(() => {
        const d = tf.mul(dy, g); // [N, C]
        const meanD = tf.mean(d, -1, true); // [N, 1]
        const meanDxHat = tf.mean(tf.mul(d, xHat), -1, true); // [N, 1]
        const dx = tf.mul(tf.sub(tf.sub(d, meanD), tf.mul(xHat, meanDxHat)), r);
        return [dx, columnSum(tf.mul(dy, xHat) as tf.Tensor2D), columnSum(dy as tf.Tensor2D)];
      });
    },
  };
}) as (x: tf.Tensor, gain: tf.Tensor, bias: tf.Tensor) => tf.Tensor2D;

/**
 * Token embedding for training: rows of `table` picked by `ids` (a gather, one dispatch), with the table's gradient
 * as a scatter-add of the output gradient's rows into the rows of their ids. The same values as the reference's
 * one-hot [N, V] × table product and its gradient (whose backward pass multiplies a transposed [V, N] one-hot by the
 * gradient), within float32 summation order. wasm has no gradient for `gather`, hence this op.
 * @param ids - int32 [N], each in [0, V) (an id outside it picks zeros and gets no gradient, as a one-hot row would)
 * @param table - float32 [V, C]
 * @returns [N, C]; differentiable with respect to `table` only
 */
export function embedFused(ids: tf.Tensor1D, table: tf.Tensor2D): tf.Tensor2D {
  const [vocab, width] = table.shape;
  const picked = ids.dataSync() as Int32Array; // a copy out of the heap
  const inRange = picked.every((id) => id >= 0 && id < vocab);
  const embed = tf.customGrad((...inputs: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [weights] = inputs as [tf.Tensor2D];
    return {
      value: inRange ? tf.gather(weights, ids) : tf.matMul(tf.oneHot(ids, vocab).toFloat(), weights),
      gradFunc: (dy: tf.Tensor) => {
        const rows = dy.dataSync();
        const grad = new Float32Array(vocab * width);
        for (let i = 0; i < picked.length; i++) {
          const id = picked[i]!;
          if (id < 0 || id >= vocab) continue;
          const from = i * width;
          const to = id * width;
          for (let c = 0; c < width; c++) grad[to + c]! += rows[from + c]!;
        }
        return tf.tensor2d(grad, [vocab, width], "float32");
      },
    };
  }) as (table: tf.Tensor) => tf.Tensor2D;
  return embed(table);
}
