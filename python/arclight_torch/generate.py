"""Batched generation with a KV cache: prompts left-padded into one batch (attention mask + explicit position ids),
one sampler per sequence seeded from its request (same seed and prompt, same tokens), stop ids, EOS, stop strings,
and the context limit. The caller serialises access to the weights."""

import random
from dataclasses import dataclass

import torch

from .distributed import module_device
from .errors import OutOfRange
from .sampling import sample_token
from .schema import GenerationRequest


@dataclass
class GenerationResult:
    prompt_token_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str = "length"
    stop_reason: int | str | None = None


def check_prompt(prompt: list[int], context_length: int, vocab: int) -> None:
    """Raises OutOfRange for a prompt that leaves no room for a response or holds an id outside the vocabulary."""
    if len(prompt) >= context_length:
        raise OutOfRange(
            f"prompt of {len(prompt)} tokens does not fit the context of {context_length} tokens "
            "(at least one token must remain for the response)"
        )
    check_ids(prompt, vocab)


def check_ids(ids: list[int], vocab: int) -> None:
    """Raises OutOfRange for an id outside [0, vocab)."""
    for token in ids:
        if not 0 <= token < vocab:
            raise OutOfRange(f"token id {token} is outside the vocabulary [0, {vocab})")


@torch.no_grad()
def generate(
    model: torch.nn.Module,
    requests: list[GenerationRequest],
    *,
    eos_ids: set[int],
    context_length: int,
    pad_id: int,
    decode,
    sync=None,
) -> list[GenerationResult]:
    """Generates one sequence per request, all decoded together. `decode(ids) -> str` checks stop strings.

    `sync((next_ids, active)) -> (next_ids, active)`: when several ranks decode together, rank 0's choice each step
    (so every rank feeds the same tokens and stops at the same step)."""
    device = module_device(model)
    batch = len(requests)
    results = [GenerationResult(list(r.prompt_token_ids), [], []) for r in requests]
    limits = [min(r.sampling.max_tokens, context_length - len(r.prompt_token_ids)) for r in requests]
    generators = [torch.Generator().manual_seed(_seed(r.sampling.seed)) for r in requests]
    width = max(len(r.prompt_token_ids) for r in requests)
    input_ids = torch.full((batch, width), pad_id, dtype=torch.long)  # [B, W], left-padded
    mask = torch.zeros((batch, width), dtype=torch.long)
    for b, r in enumerate(requests):
        input_ids[b, width - len(r.prompt_token_ids) :] = torch.tensor(r.prompt_token_ids)
        mask[b, width - len(r.prompt_token_ids) :] = 1
    input_ids, mask = input_ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # [B, W]
    out = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True)
    active = [True] * batch
    for _ in range(max(limits)):
        logits_B_V = out.logits[:, -1, :].float().cpu()  # [B, V]
        next_ids = torch.full((batch, 1), pad_id, dtype=torch.long)
        for b in range(batch):
            if not active[b]:
                continue
            token, logprob = sample_token(logits_B_V[b], requests[b].sampling, generators[b])
            results[b].token_ids.append(token)
            results[b].logprobs.append(logprob)
            next_ids[b, 0] = token
            active[b] = not _finished(results[b], requests[b], token, eos_ids, limits[b], decode)
        if sync is not None:
            next_ids, active = sync((next_ids, active))
        if not any(active):
            break
        mask = torch.cat([mask, torch.ones((batch, 1), dtype=torch.long, device=device)], 1)  # [B, W + t]
        positions = positions[:, -1:] + 1  # [B, 1]
        out = model(
            input_ids=next_ids.to(device),
            attention_mask=mask,
            position_ids=positions,
            past_key_values=out.past_key_values,
            use_cache=True,
        )
    return results


def _finished(result: GenerationResult, request: GenerationRequest, token: int, eos_ids, limit: int, decode) -> bool:
    """Records why a sequence ended, if it did: a stop id, EOS, a stop string, or its token limit."""
    if token in request.sampling.stop_token_ids:
        result.finish_reason, result.stop_reason = "stop", token
        return True
    if token in eos_ids:
        result.finish_reason, result.stop_reason = "stop", None
        return True
    if request.sampling.stop:
        text = decode(result.token_ids)
        for stop in request.sampling.stop:
            if stop in text:
                result.finish_reason, result.stop_reason = "stop", stop
                return True
    if len(result.token_ids) >= limit:
        result.finish_reason = "length"
        return True
    return False


def _seed(seed: int | None) -> int:
    return random.getrandbits(32) if seed is None else seed & 0xFFFFFFFF
