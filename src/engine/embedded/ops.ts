/** @module Differentiable GPT building blocks tuned for tfjs's wasm backend. */
import * as tf from "@tensorflow/tfjs";

/**
 * `x @ w` [N, K] × [K, M] with a gradient that transposes explicitly: XNNPACK takes only untransposed operands, and
 * tfjs's built-in gradient's transpose flags fall back to a slow kernel.
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

/** Identity forward, zero gradient backward (tfjs has no `stopGradient`). */
export const detach = tf.customGrad((...inputs: (tf.Tensor | tf.GradSaveFunc)[]) => ({
  value: tf.clone(inputs[0] as tf.Tensor),
  gradFunc: (dy: tf.Tensor) => tf.zerosLike(dy),
})) as <T extends tf.Tensor>(x: T) => T;

/** Linear coefficient of 2u = x·(GELU_CUBE·x² + GELU_LINEAR), u = √(2/π)·(x + 0.044715·x³). */
export const GELU_LINEAR = 2 * Math.sqrt(2 / Math.PI);
/** Cubic coefficient of 2u (see {@link GELU_LINEAR}). */
export const GELU_CUBE = 0.044715 * GELU_LINEAR;

/**
 * GELU (tanh approximation) as x·σ(2u), u = √(2/π)·(x + 0.044715·x³), since 1 + tanh(u) = 2σ(2u): wasm's `Sigmoid`
 * runs on XNNPACK while `Tanh` is scalar, and the cube uses products because `pow` is slow and its gradient adds a log.
 * @see Hendrycks & Gimpel, arXiv:1606.08415
 */
export function gelu(x: tf.Tensor): tf.Tensor {
  const twiceInner = tf.mul(x, tf.add(tf.mul(tf.mul(x, x), GELU_CUBE), GELU_LINEAR)); // 2u
  return tf.mul(x, tf.sigmoid(twiceInner));
}

/** ε added to the variance by every layer norm of the GPT. */
export const LAYER_NORM_EPSILON = 1e-5;

/** Layer norm over the last axis, [N, C]. @see Ba, Kiros & Hinton, arXiv:1607.06450 */
export function layerNorm(x: tf.Tensor2D, gain: tf.Tensor, bias: tf.Tensor): tf.Tensor2D {
  // tf.moments would compute x − mean a second time (and add a cast and a reshape): same numbers, four more ops.
  const centered = tf.sub(x, tf.mean(x, -1, true)); // [N, C]
  const variance = tf.mean(tf.square(centered), -1, true); // [N, 1]
  const normed = tf.mul(centered, tf.rsqrt(tf.add(variance, LAYER_NORM_EPSILON)));
  return tf.add(tf.mul(normed, gain), bias) as tf.Tensor2D;
}

/** Additive bias that hides a position from attention: exp(-1e9 - max) underflows to exactly 0 in float32. */
export const MASKED = -1e9;

/** Causal bias [T, T]: 0 where key j <= query i, {@link MASKED} above; the caller owns it. */
export function causalBias(seqLen: number): tf.Tensor2D {
  const values = new Float32Array(seqLen * seqLen);
  for (let i = 0; i < seqLen; i++) for (let j = i + 1; j < seqLen; j++) values[i * seqLen + j] = MASKED;
  return tf.keep(tf.tensor2d(values, [seqLen, seqLen]));
}
