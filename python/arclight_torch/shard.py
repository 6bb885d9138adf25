"""FSDP2 over the policy: each decoder layer (optionally under activation checkpointing) is one `fully_shard` unit,
then a root module around the whole model. Parameters stay float32 and sharded (the masters the optimizer updates);
`MixedPrecisionPolicy` all-gathers them in the compute dtype for forward and backward and reduce-scatters gradients
in float32. Gradients are summed over ranks, not averaged: each rank's loss is already its share of the step's loss
(a sum divided by the whole step's denominator)."""

import re
from collections.abc import Callable

import torch
import torch.distributed as dist
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard

from .logprobs import DEFAULT_CHUNK, token_logprobs


class PolicyModule(torch.nn.Module):
    """The FSDP root: a causal LM (or a peft model around one) with a scoring forward that stops at the final hidden
    states and computes token logprobs in chunks. Every use of the weights calls this module, so FSDP's root hooks
    run (generation calls it with the model's own arguments)."""

    def __init__(self, lm: torch.nn.Module, logprob_chunk: int = DEFAULT_CHUNK):
        super().__init__()
        self.lm = lm
        self.logprob_chunk = logprob_chunk

    def forward(self, input_ids, position_ids=None, targets=None, **model_kwargs):
        """With `targets` [B, W]: (logprobs, entropy), each [B*W] float32. Without: the causal LM's own output."""
        if targets is None:
            return self.lm(input_ids=input_ids, position_ids=position_ids, **model_kwargs)
        base = causal_lm(self.lm)
        hidden = base.get_decoder()(input_ids=input_ids, position_ids=position_ids, use_cache=False).last_hidden_state
        hidden_N_C = hidden.flatten(0, 1)  # [B*W, C]
        return token_logprobs(hidden_N_C, base.get_output_embeddings(), targets.flatten(), self.logprob_chunk)


def causal_lm(model: torch.nn.Module) -> torch.nn.Module:
    """The transformers model inside `model` (itself, or a peft model's base)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The decoder's layer list (`model.layers` in Qwen2/Qwen3/Llama/Mixtral/Qwen3-MoE)."""
    layers = getattr(causal_lm(model).get_decoder(), "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise ValueError(f"{type(causal_lm(model)).__name__}: no decoder layer list (model.layers) to shard")
    return layers


def shard(
    lm: torch.nn.Module,
    *,
    compute_dtype: torch.dtype,
    activation_checkpointing: bool,
    logprob_chunk: int = DEFAULT_CHUNK,
) -> PolicyModule:
    """Shards `lm` in place over the default process group and returns the root module to compute with."""
    mp = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=torch.float32)
    layers = decoder_layers(lm)
    for i, layer in enumerate(layers):
        if activation_checkpointing:
            # Only each layer's input is kept; its activations are recomputed in backward (one layer at a time).
            layer = checkpoint_wrapper(layer)
            layers[i] = layer
        fully_shard(layer, mp_policy=mp)
    root = PolicyModule(lm, logprob_chunk)
    fully_shard(root, mp_policy=mp)
    for module in root.modules():
        if isinstance(module, FSDPModule):
            module.set_gradient_divide_factor(1.0)
            module.set_force_sum_reduction_for_comms(True)  # gloo has no PREMUL_SUM; the factor is 1 anyway
    return root


def materialise(
    root: PolicyModule, load: Callable[[], torch.nn.Module] | None, device: torch.device, layers: int
) -> None:
    """Gives `root`, sharded on the meta device, rank 0's weights: every rank calls it, rank 0 with `load` (returns the
    same model unsharded, on CPU, referenced nowhere else), the others with None. Rank 0 broadcasts one tensor at a
    time and each rank keeps its slice (torch.distributed.checkpoint's `broadcast_from_rank0`); the weights go one
    decoder layer at a time and each group is freed on rank 0 once sent, so rank 0 holds the whole model plus what
    it has sharded so far, the others their shards plus one tensor. Buffers outside the state dict (rotary
    frequencies) are broadcast last.

    Raises ValueError naming a weight that `load`'s model did not provide."""
    if device.type != "cpu":
        # Shards allocated on the accelerator first: the broadcast then runs there (NCCL) and each rank copies its
        # slice in place, and the host holds only rank 0's model. On CPU the shards are made as their layer arrives
        # instead (DCP assigns them), so rank 0 never holds the whole model and all its shards at once.
        root.to_empty(device=device)
    tied = _tied(root)
    copies = {_plain(name) for places in tied for _, _, name in places[1:]}  # sent once, under the first name
    state, buffers = {}, {}
    if load is not None:
        full = load()
        state = {f"lm.{k}": v for k, v in full.state_dict().items() if f"lm.{k}" not in copies}
        buffers = {_plain(f"lm.{k}"): v for k, v in full.named_buffers()}
        del full  # `state` now holds the only references: each group's tensors are freed once sent
    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True, strict=False)
    for group in [*range(layers), None]:  # each layer, then the rest (embeddings, final norm, output layer)
        part = {k: state.pop(k) for k in [k for k in state if _layer_of(k) == group]}
        set_model_state_dict(root, part, options=options)
    for first, *rest in tied:  # loading assigns a new parameter per name: tie them again (embeddings and output)
        for module, name, _ in rest:
            setattr(module, name, getattr(*first[:2]))
    box = [buffers]
    if dist.get_world_size() > 1:
        dist.broadcast_object_list(box, src=0)
    for prefix, module in root.named_modules():
        for name in list(module._buffers):
            key = _plain(f"{prefix}.{name}")
            if key in box[0]:
                module._buffers[name] = box[0][key].to(device)
    for name, tensor in [*root.named_parameters(), *root.named_buffers()]:
        if tensor.is_meta:
            raise ValueError(f"the model's weights have no {_plain(name)}")


def _tied(root: torch.nn.Module) -> list[list[tuple[torch.nn.Module, str, str]]]:
    """Each parameter registered under several names (tied weights), as its places: (module, attribute, full name)."""
    places: dict[int, list[tuple[torch.nn.Module, str, str]]] = {}
    for prefix, module in root.named_modules():
        for name, param in module._parameters.items():
            if param is not None:
                places.setdefault(id(param), []).append((module, name, f"{prefix}.{name}"))
    return [p for p in places.values() if len(p) > 1]


def _layer_of(key: str) -> int | None:
    match = re.search(r"\.layers\.(\d+)\.", key)
    return int(match.group(1)) if match else None


def _plain(name: str) -> str:
    """A parameter or buffer name without the wrappers' prefixes (checkpoint_wrapper)."""
    return name.replace("_checkpoint_wrapped_module.", "")
