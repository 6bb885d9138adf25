/**
 * @module Training losses (PPO, GSPO, CISPO, SFT) on per-token tensors. Each returns the micro-batch's share of the
 * step's loss (divided by the whole step's denominator), so summed micro-batch gradients equal the batch gradient.
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
  /** Tokens per row: [N] is rows × rowWidth, row-major (GSPO's sequences); absent: all N tokens are one row. */
  rowWidth?: number;
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
 * Per token, with log ratio d = clamp(logprob − oldLogprob, ±LOG_RATIO_LIMIT) (log space, so no ratio overflows; old
 * logprobs arrive already floored, see `nonfinite-guard.ts`), advantage A and clip range [1 − ε_low, 1 + ε_high]:
 * - `ppo`: r = e^d, ℓ = max(−A·r, −A·clip(r)); with dual clip c and A < 0, ℓ = min(ℓ, −A·c).
 * - `gspo`: one ratio per row (sequence), s = exp(mean over the row's masked tokens of d), clipped for the whole
 *   row: ℓ = max(−A·s_t, −A·clip(s_t)) with s_t = sg(s)·π(y_t)/sg(π(y_t)) (value s; GSPO-token's form, which equals
 *   GSPO's sequence objective when A is constant over the row and the row's tokens are averaged).
 * - `cispo`: ℓ = −sg(clip(e^d))·A·logprob: the clipped ratio is a constant weight, so every token, clipped or not,
 *   keeps REINFORCE's gradient −sg(clip(r))·A.
 * Then ℓ ← ℓ·w_IS, and with KL coefficient β, ℓ ← ℓ + β·k3 where k3 = e^c − c − 1, c = clamp(ref − logprob, ±20).
 * SFT: ℓ = −logprob. Aggregation: Σ mask·weight·ℓ / denominator, where the caller sets denominator = Σ mask·weight
 * over the whole step (token-mean when every weight is 1), or a constant (Dr. GRPO's).
 * @param tokens - per-token tensors, [N] each
 * @param config - loss kind, objective and coefficients
 * @param denominator - Σ mask·weight over every micro-batch of the step, or the constant normaliser (> 0)
 * @returns the loss share and metric sums
 * @see Schulman et al., "Proximal Policy Optimization Algorithms", arXiv:1707.06347 (clipped objective)
 * @see Ye et al., "Mastering Complex Control in MOBA Games with Deep RL", arXiv:1912.09729 (dual clip)
 * @see Yu et al., "DAPO", arXiv:2503.14476 (separate low/high clip ratios)
 * @see Zheng et al., "Group Sequence Policy Optimization", arXiv:2507.18071 (GSPO, eq. 7; GSPO-token, eq. 13)
 * @see MiniMax, "MiniMax-M1", arXiv:2506.13585, §3.1 eq. 4 (CISPO)
 * @see Schulman, "Approximating KL Divergence", http://joschu.net/blog/kl-approx.html (k3 estimator)
 */
export function microBatchLoss(tokens: TokenTensors, config: LossConfig, denominator: number): LossParts {
  const zero = tf.scalar(0);
  if (config.kind === "sft") {
    const loss = tf.div(tf.sum(tf.mul(tf.mul(tf.neg(tokens.logprobs), tokens.mask), tokens.weights)), denominator);
    return { loss: loss as tf.Scalar, clippedTokens: zero, approxKlSum: zero };
  }
  const old = tokens.oldLogprobs ?? detach(tokens.logprobs);
  const logRatio = clampLogRatio(tf.sub(tokens.logprobs, old));
  const objective = policyTerm(tokens, config, logRatio);
  let perToken = objective.perToken;
  if (tokens.isWeights) perToken = tf.mul(perToken, tokens.isWeights);
  if (config.klCoef > 0 && tokens.refLogprobs)
    perToken = tf.add(perToken, tf.mul(k3(tokens.refLogprobs, tokens.logprobs), config.klCoef));
  const loss = tf.div(tf.sum(tf.mul(tf.mul(perToken, tokens.mask), tokens.weights)), denominator) as tf.Scalar;
  const clippedTokens = tf.sum(tf.mul(tf.cast(objective.clipped, "float32"), tokens.mask)) as tf.Scalar;
  const approxKlSum = tf.sum(tf.mul(k3(old, tokens.logprobs), tokens.mask)) as tf.Scalar;
  return { loss, clippedTokens, approxKlSum };
}

/** One objective's per-token loss before IS weights and KL, and where its clip was active (bool, [N]). */
function policyTerm(
  tokens: TokenTensors,
  config: Extract<LossConfig, { kind: "ppo" }>,
  logRatio: tf.Tensor1D,
): { perToken: tf.Tensor1D; clipped: tf.Tensor1D } {
  const objective = config.objective ?? "ppo";
  const low = 1 - config.clipLow;
  const high = 1 + config.clipHigh;
  if (objective === "cispo") {
    const ratio = detach(tf.exp(logRatio));
    const weight = tf.clipByValue(ratio, low, high);
    const perToken = tf.mul(tf.neg(tf.mul(weight, tokens.advantages)), tokens.logprobs) as tf.Tensor1D;
    return { perToken, clipped: tf.logicalOr(tf.less(ratio, low), tf.greater(ratio, high)) as tf.Tensor1D };
  }
  const ratio =
    objective === "gspo"
      ? tf.exp(
          tf.add(
            detach(sequenceLogRatio(logRatio, tokens.mask, tokens.rowWidth)),
            tf.sub(tokens.logprobs, detach(tokens.logprobs)),
          ),
        )
      : tf.exp(logRatio);
  const negAdv = tf.neg(tokens.advantages);
  const unclipped = tf.mul(negAdv, ratio);
  const clipped = tf.mul(negAdv, tf.clipByValue(ratio, low, high));
  let perToken = tf.maximum(unclipped, clipped) as tf.Tensor1D;
  if (objective === "ppo" && config.dualClip !== undefined) {
    const dual = tf.minimum(perToken, tf.mul(negAdv, config.dualClip));
    perToken = tf.where(tf.less(tokens.advantages, 0), dual, perToken) as tf.Tensor1D;
  }
  return { perToken, clipped: tf.greater(clipped, unclipped) as tf.Tensor1D };
}

/** GSPO's sequence log ratio (mean of the row's masked log ratios, 0 if none), broadcast to its tokens, [N]. */
function sequenceLogRatio(logRatio: tf.Tensor1D, mask: tf.Tensor1D, rowWidth: number | undefined): tf.Tensor1D {
  const width = rowWidth ?? logRatio.shape[0];
  const rows = logRatio.shape[0] / width;
  const masked = tf.reshape(tf.mul(logRatio, mask), [rows, width]); // [B, T]
  const counts = tf.maximum(tf.sum(tf.reshape(mask, [rows, width]), 1, true), 1); // [B, 1]
  const perRow = tf.div(tf.sum(masked, 1, true), counts); // [B, 1]
  return tf.reshape(tf.tile(perRow, [1, width]), [rows * width]) as tf.Tensor1D; // [N]
}

/** Clamps log ratios to ±LOG_RATIO_LIMIT before any `exp` (zero gradient outside, as `torch.clamp`). */
function clampLogRatio(logRatio: tf.Tensor1D): tf.Tensor1D {
  return tf.clipByValue(logRatio, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT);
}

/**
 * k3 estimate of KL(p ‖ q): k3 = e^d − d − 1, d = clamp(log q − log p) (unbiased, ≥ 0), [N] nats.
 * @see Schulman, "Approximating KL Divergence", http://joschu.net/blog/kl-approx.html
 */
export function k3(otherLogprobs: tf.Tensor1D, logprobs: tf.Tensor1D): tf.Tensor1D {
  const d = clampLogRatio(tf.sub(otherLogprobs, logprobs));
  return tf.sub(tf.sub(tf.exp(d), d), 1) as tf.Tensor1D;
}
