"""Training losses on per-token tensors, the same formulas as src/engine/embedded/loss.ts: the PPO clipped policy
loss (asymmetric clip, optional dual clip, optional k3 KL to a reference, truncated importance-sampling weights) and
cross-entropy for SFT. Each returns a micro-batch's share of the step's loss (a sum divided by the whole step's
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


@dataclass
class LossParts:
    """A micro-batch's loss share (differentiable scalar) and masked sums for metrics."""

    loss: torch.Tensor
    clipped_tokens: torch.Tensor
    approx_kl_sum: torch.Tensor


def micro_batch_loss(tokens: TokenTensors, config: LossConfig, denominator: float) -> LossParts:
    """The step's loss share of one micro-batch.

    PPO, per token with ratio r = exp(clamp(logprob - old, +-20)) and advantage A: l = max(-A r, -A clip(r, 1 - clip_low,
    1 + clip_high)); with dual clip c and A < 0, l = min(l, -A c); then l *= w_IS; with KL coefficient b,
    l += b k3 where k3 = exp(ref - logprob) - (ref - logprob) - 1. SFT: l = -logprob.
    Aggregation: sum(mask * weight * l) / denominator, denominator = sum(mask * weight) over the whole step.
    See arXiv:1707.06347 (PPO), arXiv:1912.09729 (dual clip), arXiv:2503.14476 (asymmetric clip),
    http://joschu.net/blog/kl-approx.html (k3).
    """
    zero = tokens.logprobs.new_zeros(())
    weight = tokens.mask * tokens.weights
    if config.kind == "sft":
        return LossParts((-tokens.logprobs * weight).sum() / denominator, zero, zero)
    old = tokens.old_logprobs if tokens.old_logprobs is not None else tokens.logprobs.detach()
    ratio = torch.exp(torch.clamp(tokens.logprobs - old, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT))
    neg_adv = -tokens.advantages
    unclipped = neg_adv * ratio
    clipped = neg_adv * torch.clamp(ratio, 1 - config.clip_low, 1 + config.clip_high)
    per_token = torch.maximum(unclipped, clipped)
    if config.dual_clip is not None:
        dual = torch.minimum(per_token, neg_adv * config.dual_clip)
        per_token = torch.where(tokens.advantages < 0, dual, per_token)
    if tokens.is_weights is not None:
        per_token = per_token * tokens.is_weights
    if config.kl_coef > 0 and tokens.ref_logprobs is not None:
        per_token = per_token + config.kl_coef * k3(tokens.ref_logprobs, tokens.logprobs)
    loss = (per_token * weight).sum() / denominator
    clipped_tokens = ((clipped > unclipped).to(weight.dtype) * tokens.mask).sum().detach()
    approx_kl_sum = (k3(old, tokens.logprobs) * tokens.mask).sum().detach()
    return LossParts(loss, clipped_tokens, approx_kl_sum)


def k3(other_logprobs: torch.Tensor, logprobs: torch.Tensor) -> torch.Tensor:
    """k3 estimate of KL(p || q) from samples of p: with d = clamp(log q - log p, +-LOG_RATIO_LIMIT),
    k3 = e^d - d - 1 (unbiased, >= 0; the clamp keeps it finite)."""
    d = torch.clamp(other_logprobs - logprobs, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    return torch.exp(d) - d - 1
