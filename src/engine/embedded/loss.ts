/**
 * @module Training losses on per-token tensors: the PPO clipped policy loss (asymmetric clip, optional dual clip,
 * optional k3 KL to a reference, truncated importance-sampling weights) and cross-entropy for SFT. Each returns the
 * micro-batch's share of the step's loss — a sum divided by the whole step's denominator — so gradients summed over
 * micro-batches equal the gradient of the full batch.
 */
import * as tf from "@tensorflow/tfjs";
import type { LossConfig } from "../engine.js";
import { LOG_RATIO_LIMIT } from "../nonfinite-guard.js";
import { detach } from "./ops.js";

/** Per-token inputs of one micro-batch, all [N] (N = rows × padded width), aligned with the target tokens. */
export interface TokenTensors {
  /** Current-policy logprobs of the targets (nats), differentiable. */
  logprobs: tf.Tensor1D;
  /** 1 for trained tokens, 0 for prompt and padding. */
  mask: tf.Tensor1D;
  /** Aggregation weight of each token: its row's weight (`weighted`) or 1 (`token-mean`). */
  weights: tf.Tensor1D;
  advantages: tf.Tensor1D;
  /** Behaviour-policy logprobs (nats); null means on-policy (ratio 1 with the current policy's gradient). */
  oldLogprobs: tf.Tensor1D | null;
  /** Reference-policy logprobs (nats) for the KL term; null when klCoef is 0. */
  refLogprobs: tf.Tensor1D | null;
  /** Truncated importance-sampling weights (constants); null means 1. */
  isWeights: tf.Tensor1D | null;
}

/** A micro-batch's loss share plus masked sums for metrics (scalars). */
export interface LossParts {
  /** Σ mask·weight·ℓ / denominator, differentiable. */
  loss: tf.Scalar;
  /** Masked tokens whose ratio was clipped. */
  clippedTokens: tf.Scalar;
  /** Σ over masked tokens of the k3 estimate of KL(current ‖ old) (nats). */
  approxKlSum: tf.Scalar;
}

/**
 * The step's loss share of one micro-batch.
 *
 * PPO, per token with ratio r = exp(clamp(logprob − oldLogprob, ±LOG_RATIO_LIMIT)) and advantage A (log space, so
 * no ratio overflows; old logprobs arrive already floored, see `nonfinite-guard.ts`):
 * ℓ = max(−A·r, −A·clip(r, 1 − clipLow, 1 + clipHigh)); with dual clip c and A < 0, ℓ = min(ℓ, −A·c);
 * then ℓ ← ℓ·w_IS, and with KL coefficient β, ℓ ← ℓ + β·k3 where k3 = e^c − c − 1, c = clamp(ref − logprob, ±20).
 * SFT: ℓ = −logprob. Aggregation: Σ mask·weight·ℓ / denominator, where the caller sets denominator = Σ mask·weight
 * over the whole step (token-mean when every weight is 1).
 * @param tokens - per-token tensors, [N] each
 * @param config - loss kind and coefficients
 * @param denominator - Σ mask·weight over every micro-batch of the step (> 0)
 * @returns the loss share and metric sums
 * @see Schulman et al., "Proximal Policy Optimization Algorithms", arXiv:1707.06347 (clipped objective)
 * @see Ye et al., "Mastering Complex Control in MOBA Games with Deep RL", arXiv:1912.09729 (dual clip)
 * @see Yu et al., "DAPO", arXiv:2503.14476 (separate low/high clip ratios)
 * @see Schulman, "Approximating KL Divergence", http://joschu.net/blog/kl-approx.html (k3 estimator)
 */
export function microBatchLoss(tokens: TokenTensors, config: LossConfig, denominator: number): LossParts {
  const zero = tf.scalar(0);
  if (config.kind === "sft") {
    const loss = tf.div(tf.sum(tf.mul(tf.mul(tf.neg(tokens.logprobs), tokens.mask), tokens.weights)), denominator);
    return { loss: loss as tf.Scalar, clippedTokens: zero, approxKlSum: zero };
  }
  const old = tokens.oldLogprobs ?? detach(tokens.logprobs);
  const ratio = tf.exp(clampLogRatio(tf.sub(tokens.logprobs, old)));
  const negAdv = tf.neg(tokens.advantages);
  const unclipped = tf.mul(negAdv, ratio);
  const clipped = tf.mul(negAdv, tf.clipByValue(ratio, 1 - config.clipLow, 1 + config.clipHigh));
  let perToken = tf.maximum(unclipped, clipped);
  if (config.dualClip !== undefined) {
    const dual = tf.minimum(perToken, tf.mul(negAdv, config.dualClip));
    perToken = tf.where(tf.less(tokens.advantages, 0), dual, perToken);
  }
  if (tokens.isWeights) perToken = tf.mul(perToken, tokens.isWeights);
  if (config.klCoef > 0 && tokens.refLogprobs)
    perToken = tf.add(perToken, tf.mul(k3(tokens.refLogprobs, tokens.logprobs), config.klCoef));
  const loss = tf.div(tf.sum(tf.mul(tf.mul(perToken, tokens.mask), tokens.weights)), denominator) as tf.Scalar;
  const clippedTokens = tf.sum(tf.mul(tf.cast(tf.greater(clipped, unclipped), "float32"), tokens.mask)) as tf.Scalar;
  const approxKlSum = tf.sum(tf.mul(k3(old, tokens.logprobs), tokens.mask)) as tf.Scalar;
  return { loss, clippedTokens, approxKlSum };
}

/** Clamps log ratios to ±LOG_RATIO_LIMIT before any `exp` (zero gradient outside, as `torch.clamp`). */
function clampLogRatio(logRatio: tf.Tensor1D): tf.Tensor1D {
  return tf.clipByValue(logRatio, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT);
}

/**
 * k3 estimate of KL(p ‖ q) from samples of p: with log-ratio d = clamp(log q − log p, ±LOG_RATIO_LIMIT),
 * k3 = e^d − d − 1 (unbiased, >= 0; the clamp keeps it finite).
 * @param otherLogprobs - log q, [N]
 * @param logprobs - log p of the sampled tokens, [N]
 * @returns [N] (nats)
 * @see Schulman, "Approximating KL Divergence", http://joschu.net/blog/kl-approx.html
 */
export function k3(otherLogprobs: tf.Tensor1D, logprobs: tf.Tensor1D): tf.Tensor1D {
  const d = clampLogRatio(tf.sub(otherLogprobs, logprobs));
  return tf.sub(tf.sub(tf.exp(d), d), 1) as tf.Tensor1D;
}
