/**
 * @module Fused differentiable training ops (GELU, `x @ w + b`, layer norm, embedding), one tape entry each: tfjs
 * keeps every recorded op's inputs until the backward pass ends and the heap never shrinks, so fewer intermediates
 * bound the wasm heap.
 */
import * as tf from "@tensorflow/tfjs";
import { GELU_CUBE, GELU_LINEAR, LAYER_NORM_EPSILON } from "./ops.js";
import { columnSum, geluGrad } from "./wasm-backward.js";
import { affine } from "./wasm-matmul.js";

/**
 * GELU as one op keeping x and σ(2u); backward is one {@link geluGrad} dispatch. The forward stays on tfjs ops:
 * XNNPACK's sigmoid beats the `gelu` kernel at training sizes.
 * @see Hendrycks & Gimpel, arXiv:1606.08415
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

/** dx = dy·(s + x·s·(1 − s)·(2u)′), s = σ(2u), (2u)′ = 3·GELU_CUBE·x² + GELU_LINEAR; tidy frees temporaries now. */
function geluGradOps(x: tf.Tensor, s: tf.Tensor, dy: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const slope = tf.add(tf.mul(tf.mul(x, x), 3 * GELU_CUBE), GELU_LINEAR);
    const sigmoidGrad = tf.mul(s, tf.sub(1, s));
    return tf.mul(dy, tf.add(s, tf.mul(tf.mul(x, sigmoidGrad), slope)));
  });
}

/**
 * `x @ w + b` [N, M] as one op: forward via `installAffineKernel` (no pre-bias product kept), backward products with
 * transpose flags that `wasm-matmul.ts` reads through strides.
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
 * Layer norm as one op. With x̂ the normalised rows, r = 1/σ, g the gain: dg = Σ_rows dy·x̂, db = Σ_rows dy,
 * dx = r·(d − mean(d) − x̂·mean(d·x̂)), d = dy·g.
 * @see Ba, Kiros & Hinton, arXiv:1607.06450
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
 * Embedding as a gather with a scatter-add gradient into `table` (wasm has no `gather` gradient); equals the
 * one-hot × table reference within summation order. An out-of-range id picks zeros, as a one-hot row would.
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
