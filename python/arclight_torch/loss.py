"""Training losses on per-token tensors, the same formulas as src/engine/embedded/loss.ts: the policy objectives
(PPO's clipped token ratio with asymmetric and optional dual clip; GSPO's clipped sequence ratio; CISPO's clipped,
stop-gradient IS weight on REINFORCE), each with optional k3 KL to a reference and truncated importance-sampling
weights, and cross-entropy for SFT. Each returns a micro-batch's share of the step's loss (a sum divided by the whole step's
denominator), so gradients summed over micro-batches equal the gradient of the full batch."""

from dataclasses import dataclass

import torch

from .schema import LossConfig

# The non-finite guard of src/engine/nonfinite-guard.ts, same constants: recorded (old, reference) logprobs are
# floored into [LOGPROB_FLOOR, 0] when packed (`clamp_recorded`), and log ratios are clamped to +-LOG_RATIO_LIMIT
# before any exp (zero gradient outside, as the TS clipByValue).
LOGPROB_FLOOR = -50.0
LOG_RATIO_LIMIT = 20.0


def clamp_recorded(logprobs: torch.Tensor) -> torch.Tensor:
    """Step 1 of the guard: NaN and anything below the floor become the floor, anything above 0 becomes 0."""
    floored = torch.nan_to_num(logprobs, nan=LOGPROB_FLOOR, neginf=LOGPROB_FLOOR, posinf=0.0)
    return floored.clamp(LOGPROB_FLOOR, 0.0)


@dataclass
class TokenTensors:
    """Per-token inputs of one micro-batch, all [N], aligned with the target tokens."""

    logprobs: torch.Tensor  # current policy (nats), differentiable
    mask: torch.Tensor  # 1 for trained tokens
    weights: torch.Tensor  # row weight (weighted) or 1 (token-mean)
    advantages: torch.Tensor
    old_logprobs: torch.Tensor | None  # None: on-policy (ratio 1, gradient of the current policy)
    ref_logprobs: torch.Tensor | None
    is_weights: torch.Tensor | None
    sequence_ids: torch.Tensor | None = None  # [N] long: the row (GSPO's sequence) of each token, -1 on padding; None: one


@dataclass
class LossParts:
    """A micro-batch's loss share (differentiable scalar) and masked sums for metrics."""

    loss: torch.Tensor
    clipped_tokens: torch.Tensor
    approx_kl_sum: torch.Tensor


def micro_batch_loss(tokens: TokenTensors, config: LossConfig, denominator: float) -> LossParts:
    """The step's loss share of one micro-batch.

    Per token, with log ratio d = clamp(logprob - old, +-20), advantage A and clip range [1 - clip_low, 1 + clip_high]:
    - ppo: r = e^d, l = max(-A r, -A clip(r)); with dual clip c and A < 0, l = min(l, -A c) (arXiv:1707.06347,
      arXiv:1912.09729; asymmetric clip arXiv:2503.14476).
    - gspo: s = exp(mean of d over the row's masked tokens), one ratio per row, clipped for the whole row:
      l = max(-A s_t, -A clip(s_t)) with s_t = sg(s) pi(y_t) / sg(pi(y_t)) (value s; GSPO-token, arXiv:2507.18071
      eq. 13, which equals GSPO's sequence objective, eq. 7, when A is constant over the row).
    - cispo: l = -sg(clip(e^d)) A logprob: the clipped ratio is a constant weight, every token keeps REINFORCE's
      gradient (MiniMax-M1, arXiv:2506.13585 eq. 4).
    Then l *= w_IS; with KL coefficient b, l += b k3 where k3 = exp(ref - logprob) - (ref - logprob) - 1
    (http://joschu.net/blog/kl-approx.html). SFT: l = -logprob.
    Aggregation: sum(mask * weight * l) / denominator, denominator = sum(mask * weight) over the whole step, or the
    constant normaliser of Dr. GRPO (arXiv:2503.20783).
    """
    zero = tokens.logprobs.new_zeros(())
    weight = tokens.mask * tokens.weights
    if config.kind == "sft":
        return LossParts((-tokens.logprobs * weight).sum() / denominator, zero, zero)
    old = tokens.old_logprobs if tokens.old_logprobs is not None else tokens.logprobs.detach()
    log_ratio = torch.clamp(tokens.logprobs - old, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    per_token, clipped_mask = _policy_term(tokens, config, log_ratio)
    if tokens.is_weights is not None:
        per_token = per_token * tokens.is_weights
    if config.kl_coef > 0 and tokens.ref_logprobs is not None:
        per_token = per_token + config.kl_coef * k3(tokens.ref_logprobs, tokens.logprobs)
    loss = (per_token * weight).sum() / denominator
    clipped_tokens = (clipped_mask.to(weight.dtype) * tokens.mask).sum().detach()
    approx_kl_sum = (k3(old, tokens.logprobs) * tokens.mask).sum().detach()
    return LossParts(loss, clipped_tokens, approx_kl_sum)


def _policy_term(tokens: TokenTensors, config: LossConfig, log_ratio: torch.Tensor):
    """One objective's per-token loss before IS weights and KL, and where its clip was active (bool, [N])."""
    low, high = 1 - config.clip_low, 1 + config.clip_high
    if config.objective == "cispo":
        ratio = torch.exp(log_ratio).detach()
        per_token = -torch.clamp(ratio, low, high) * tokens.advantages * tokens.logprobs
        return per_token, (ratio < low) | (ratio > high)
    if config.objective == "gspo":
        seq = sequence_log_ratio(log_ratio, tokens.mask, tokens.sequence_ids).detach()
        ratio = torch.exp(seq + tokens.logprobs - tokens.logprobs.detach())
    else:
        ratio = torch.exp(log_ratio)
    neg_adv = -tokens.advantages
    unclipped = neg_adv * ratio
    clipped = neg_adv * torch.clamp(ratio, low, high)
    per_token = torch.maximum(unclipped, clipped)
    if config.objective == "ppo" and config.dual_clip is not None:
        dual = torch.minimum(per_token, neg_adv * config.dual_clip)
        per_token = torch.where(tokens.advantages < 0, dual, per_token)
    return per_token, clipped > unclipped


def sequence_log_ratio(log_ratio: torch.Tensor, mask: torch.Tensor, sequence_ids: torch.Tensor | None) -> torch.Tensor:
    """GSPO's sequence log ratio broadcast to every token of its sequence: the mean of the sequence's masked log ratios
    (0 for a sequence without masked tokens), [N]. `sequence_ids` (long, [N]) may pack several sequences in one row
    and mark padding -1; None makes all N tokens one sequence."""
    if sequence_ids is None:
        sequence_ids = torch.zeros_like(log_ratio, dtype=torch.long)
    buckets = int(sequence_ids.max()) + 2  # one per sequence, the last for padding
    ids = torch.where(sequence_ids < 0, buckets - 1, sequence_ids)
    sums = log_ratio.new_zeros(buckets).index_add(0, ids, log_ratio * mask)  # [S]
    counts = mask.new_zeros(buckets).index_add(0, ids, mask).clamp(min=1)  # [S]
    return (sums / counts)[ids]  # [N]


def k3(other_logprobs: torch.Tensor, logprobs: torch.Tensor) -> torch.Tensor:
    """k3 estimate of KL(p || q) from samples of p: with d = clamp(log q - log p, +-LOG_RATIO_LIMIT),
    k3 = e^d - d - 1 (unbiased, >= 0; the clamp keeps it finite)."""
    d = torch.clamp(other_logprobs - logprobs, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    return torch.exp(d) - d - 1
