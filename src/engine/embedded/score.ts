/** @module Logprobs of given sequences under the current weights (old-policy and reference logprobs). */
import * as tf from "@tensorflow/tfjs";
import { packRows, pickLogprobs } from "./logprob.js";
import type { Gpt } from "./model.js";

/** Logprob of each token given the ones before, ragged like the input; position 0 is 0. */
export function scoreTokens(model: Gpt, tokenIds_B_T: number[][], batchSize: number): number[][] {
  const out: number[][] = [];
  for (let start = 0; start < tokenIds_B_T.length; start += batchSize) {
    const chunk = tokenIds_B_T.slice(start, start + batchSize);
    const { inputs, targets, width } = packRows(chunk);
    const values = tf.tidy(() => {
      const { logits } = model.forward(tf.tensor2d(inputs, [chunk.length, width], "int32"), { inference: true });
      return pickLogprobs(tf.logSoftmax(logits), tf.tensor1d(targets, "int32"));
    });
    const flat = values.dataSync();
    values.dispose();
    chunk.forEach((row, b) => {
      const lp = new Array<number>(row.length).fill(0);
      for (let t = 1; t < row.length; t++) lp[t] = flat[b * width + t - 1]!;
      out.push(lp);
    });
  }
  return out;
}
