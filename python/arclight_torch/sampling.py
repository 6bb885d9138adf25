"""Picks the next token from one row of logits with temperature, top-k and top-p, with the same semantics as
src/engine/embedded/sample.ts: temperature > 0 returns log q(token) under the distribution actually sampled from
(softmax(logits / T) restricted to top-k, then the top-p nucleus, renormalised); temperature 0 is argmax with its
log-softmax under the raw logits. See Holtzman et al., ICLR 2020 (nucleus sampling)."""

import torch

from .schema import SamplingParams


def sample_token(logits_V: torch.Tensor, params: SamplingParams, generator: torch.Generator) -> tuple[int, float]:
    """Samples one token id from `logits_V` ([V], any device) and returns it with its logprob (nats)."""
    logits = logits_V.double()
    if params.temperature <= 0:
        token = int(torch.argmax(logits))
        return token, float(torch.log_softmax(logits, -1)[token])
    scaled = logits / params.temperature  # [V]
    vocab = scaled.shape[0]
    use_top_k = 0 < params.top_k < vocab
    if use_top_k or params.top_p < 1:
        # Stable descending sort: equal logits keep id order, so the kept set is deterministic.
        order = torch.sort(scaled, descending=True, stable=True).indices
        if use_top_k:
            order = order[: params.top_k]
        if params.top_p < 1:
            probs = torch.softmax(scaled[order], -1)
            keep = int(torch.searchsorted(torch.cumsum(probs, -1), torch.tensor(params.top_p, dtype=probs.dtype))) + 1
            order = order[: min(keep, order.shape[0])]
        kept = torch.full_like(scaled, float("-inf"))
        kept[order] = scaled[order]
        scaled = kept
    logq = torch.log_softmax(scaled, -1)  # [V]
    token = int(torch.multinomial(logq.exp().cpu().float(), 1, generator=generator))
    return token, float(logq[token])
