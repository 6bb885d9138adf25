/**
 * @module Per-token logprobs from logits: the one place that turns [N, V] logits into the logprob of given target
 * ids, shared by scoring (`Engine.logprobs`) and the training losses so both see identical numbers.
 */
import * as tf from "@tensorflow/tfjs";

/**
 * Log-softmax of each row picked at its target id (differentiable: oneHot × sum, since wasm lacks a `gather`
 * gradient).
 * @param logSoftmax_N_V - log-softmax of the logits, [N, V]
 * @param targets_N - int32 [N]
 * @returns logprobs [N] (nats)
 */
export function pickLogprobs(logSoftmax_N_V: tf.Tensor2D, targets_N: tf.Tensor1D): tf.Tensor1D {
  const vocab = logSoftmax_N_V.shape[1];
  return tf.sum(tf.mul(logSoftmax_N_V, tf.oneHot(targets_N, vocab).toFloat()), -1) as tf.Tensor1D; // [N]
}

/**
 * Entropy of each row's distribution.
 * @param logSoftmax_N_V - [N, V]
 * @returns [N] (nats)
 */
export function rowEntropy(logSoftmax_N_V: tf.Tensor2D): tf.Tensor1D {
  return tf.neg(tf.sum(tf.mul(tf.exp(logSoftmax_N_V), logSoftmax_N_V), -1)) as tf.Tensor1D; // [N]
}

/**
 * Packs ragged rows into right-padded model inputs and next-token targets.
 * @param tokenIds_B_T - ragged rows, each of length >= 1
 * @returns inputs int32 [B, W] (tokens 0..T-2 of each row), targets int32 [B*W] (tokens 1..T-1), W = max T − 1;
 * padding is id 0 and must be masked by the caller
 */
export function packRows(tokenIds_B_T: number[][]): { inputs: Int32Array; targets: Int32Array; width: number } {
  const width = Math.max(1, ...tokenIds_B_T.map((row) => row.length - 1));
  const inputs = new Int32Array(tokenIds_B_T.length * width);
  const targets = new Int32Array(tokenIds_B_T.length * width);
  tokenIds_B_T.forEach((row, b) => {
    for (let t = 0; t + 1 < row.length; t++) {
      inputs[b * width + t] = row[t]!;
      targets[b * width + t] = row[t + 1]!;
    }
  });
  return { inputs, targets, width };
}
