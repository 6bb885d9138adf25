/**
 * @module Differentiable building blocks of the GPT tuned for the tfjs wasm backend: a matmul whose backward pass
 * stays on the fast path, GELU without `pow`, layer norm, and a gradient-blocking identity.
 */
import * as tf from "@tensorflow/tfjs";

/**
 * `x @ w` for 2-D inputs with a hand-written gradient that transposes explicitly. The wasm backend's fast (XNNPACK)
 * matmul only takes untransposed, unbatched operands; tfjs's built-in gradient uses transposed flags and falls back
 * to a slow kernel (train step 11.2 s → 2.9 s in the prototype measurements).
 * @param x - [N, K]
 * @param w - [K, M]
 * @returns [N, M]
 */
export const linear = tf.customGrad((...inputs: (tf.Tensor | tf.GradSaveFunc)[]) => {
  const [x, w, save] = inputs as [tf.Tensor2D, tf.Tensor2D, tf.GradSaveFunc];
  save([x, w]);
  return {
    value: tf.matMul(x, w),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [xs, ws] = saved as [tf.Tensor2D, tf.Tensor2D];
      // dL/dx = dy @ wᵀ: [N, M] @ [M, K]; dL/dw = xᵀ @ dy: [K, N] @ [N, M]
      return [tf.matMul(dy as tf.Tensor2D, tf.transpose(ws)), tf.matMul(tf.transpose(xs), dy as tf.Tensor2D)];
    },
  };
}) as (x: tf.Tensor, w: tf.Tensor) => tf.Tensor2D;

/**
 * Identity in the forward pass, zero gradient in the backward pass (tfjs has no `stopGradient`).
 * @param x - any shape
 * @returns a copy of `x` that gradients do not flow through
 */
export const detach = tf.customGrad((...inputs: (tf.Tensor | tf.GradSaveFunc)[]) => ({
  value: tf.clone(inputs[0] as tf.Tensor),
  gradFunc: (dy: tf.Tensor) => tf.zerosLike(dy),
})) as <T extends tf.Tensor>(x: T) => T;

/** Linear coefficient of 2u = x·(GELU_CUBE·x² + GELU_LINEAR), u = √(2/π)·(x + 0.044715·x³). */
export const GELU_LINEAR = 2 * Math.sqrt(2 / Math.PI);
/** Cubic coefficient of 2u (see {@link GELU_LINEAR}). */
export const GELU_CUBE = 0.044715 * GELU_LINEAR;

/**
 * GELU, tanh approximation, computed as x·σ(2u) — the same function as 0.5·x·(1 + tanh(u)) since
 * 1 + tanh(u) = 2σ(2u) — with u = √(2/π)·(x + 0.044715·x³) written as x·(a·x² + b). wasm's `Sigmoid` runs on
 * XNNPACK while its `Tanh` is scalar: forward + backward over [4064, 512] took ~75 ms instead of ~130 ms. The cube
 * is built from products: `pow` is much slower on wasm and its gradient adds a log.
 * @param x - any shape
 * @returns same shape
 * @see Hendrycks & Gimpel, "Gaussian Error Linear Units (GELUs)", arXiv:1606.08415, eq. for the tanh approximation
 */
export function gelu(x: tf.Tensor): tf.Tensor {
  const twiceInner = tf.mul(x, tf.add(tf.mul(tf.mul(x, x), GELU_CUBE), GELU_LINEAR)); // 2u
  return tf.mul(x, tf.sigmoid(twiceInner));
}

/** ε added to the variance by every layer norm of the GPT. */
export const LAYER_NORM_EPSILON = 1e-5;

/**
 * Layer normalisation over the last axis with learned gain and bias (ε = {@link LAYER_NORM_EPSILON}).
 * @param x - [N, C]
 * @param gain - [C]
 * @param bias - [C]
 * @returns [N, C]
 * @see Ba, Kiros & Hinton, "Layer Normalization", arXiv:1607.06450
 */
export function layerNorm(x: tf.Tensor2D, gain: tf.Tensor, bias: tf.Tensor): tf.Tensor2D {
  // tf.moments would compute x − mean a second time (and add a cast and a reshape): same numbers, four more ops.
  const centered = tf.sub(x, tf.mean(x, -1, true)); // [N, C]
  const variance = tf.mean(tf.square(centered), -1, true); // [N, 1]
  const normed = tf.mul(centered, tf.rsqrt(tf.add(variance, LAYER_NORM_EPSILON)));
  return tf.add(tf.mul(normed, gain), bias) as tf.Tensor2D;
}

/** Additive bias that hides a position from attention: exp(-1e9 - max) underflows to exactly 0 in float32. */
export const MASKED = -1e9;

/**
 * Causal attention bias: 0 where key j <= query i, {@link MASKED} above the diagonal.
 * @param seqLen - T (tokens)
 * @returns a kept [T, T] tensor; the caller owns it
 */
export function causalBias(seqLen: number): tf.Tensor2D {
  const values = new Float32Array(seqLen * seqLen);
  for (let i = 0; i < seqLen; i++) for (let j = i + 1; j < seqLen; j++) values[i * seqLen + j] = MASKED;
  return tf.keep(tf.tensor2d(values, [seqLen, seqLen]));
}
