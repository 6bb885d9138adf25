/** @module Per-token logprobs from logits, shared by scoring and the losses so both see identical numbers. */
import * as tf from "@tensorflow/tfjs";

/** Log-softmax picked at each target id, [N] nats; oneHot × sum since wasm has no `gather` gradient. */
export function pickLogprobs(logSoftmax_N_V: tf.Tensor2D, targets_N: tf.Tensor1D): tf.Tensor1D {
  const vocab = logSoftmax_N_V.shape[1];
  return tf.sum(tf.mul(logSoftmax_N_V, tf.oneHot(targets_N, vocab).toFloat()), -1) as tf.Tensor1D; // [N]
}

/** Entropy of each row, [N] nats. */
export function rowEntropy(logSoftmax_N_V: tf.Tensor2D): tf.Tensor1D {
  return tf.neg(tf.sum(tf.mul(tf.exp(logSoftmax_N_V), logSoftmax_N_V), -1)) as tf.Tensor1D; // [N]
}

/** Right-padded inputs [B, W] and next-token targets [B*W], W = max T − 1; padding is id 0, masked by the caller. */
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
