"""Token logprobs and entropy from final hidden states, a chunk of positions at a time: the output layer is applied
to `chunk` positions, log-softmaxed in float32, and only the target's logprob and the entropy are kept, so the whole
[tokens, vocab] float32 tensor never exists. Under autograd each chunk is recomputed in the backward pass
(torch.utils.checkpoint), so the backward pass holds one chunk's logits at a time too.

At Qwen's 152k vocabulary an 8k-token row's float32 log-softmax alone is 8192 x 151936 x 4 B = 5.0 GB; with the
default chunk of 1024 positions it is 0.62 GB, plus the same again for its gradient while one chunk is in backward."""

import torch
from torch.utils.checkpoint import checkpoint

DEFAULT_CHUNK = 1024


def token_logprobs(
    hidden_N_C: torch.Tensor, head: torch.nn.Module, targets_N: torch.Tensor, chunk: int = DEFAULT_CHUNK
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logprob (nats) of each target and the entropy of each position's distribution.

    @param hidden_N_C - final hidden states of N positions, [N, C]
    @param head - the output layer (C -> V)
    @param targets_N - the token each position predicts, [N]
    @param chunk - positions per application of `head`; `<= 0` applies it to all N at once
    @returns (logprobs [N] float32, differentiable; entropy [N] float32, detached)"""
    n = hidden_N_C.shape[0]
    step = n if chunk <= 0 else chunk
    logprobs, entropies = [], []
    for start in range(0, n, max(step, 1)):
        h, t = hidden_N_C[start : start + step], targets_N[start : start + step]
        if torch.is_grad_enabled() and h.requires_grad and step < n:
            lp, ent = checkpoint(_chunk, h, t, head, use_reentrant=False)
        else:
            lp, ent = _chunk(h, t, head)
        logprobs.append(lp)
        entropies.append(ent)
    return torch.cat(logprobs), torch.cat(entropies).detach()


def _chunk(hidden: torch.Tensor, targets: torch.Tensor, head: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    log_softmax = torch.log_softmax(head(hidden).float(), -1)  # [n, V]
    picked = log_softmax.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # [n]
    with torch.no_grad():
        entropy = -(log_softmax.exp() * log_softmax).sum(-1)  # [n]
    return picked, entropy
