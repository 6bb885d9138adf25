"""Checkpoints, two copies in one folder. `sharded/` is torch.distributed.checkpoint's (DCP) copy of the float32
master weights (or LoRA adapters) and the AdamW state, written by every rank in parallel and resharded on load, so a
run resumes exactly on the same or another number of ranks. Beside it, rank 0 writes the consolidated Hugging Face
folder: a full fine-tune's `save_pretrained` (config.json + safetensors, loadable by transformers and vLLM) or a
LoRA run's PEFT adapter (adapter_config.json + adapter_model.safetensors), the tokenizer, and `arclight.json`
(format, policy version, LoRA settings, adapter, world size). A load checks every tensor's name and shape against
the sharded copy's metadata before reading any, so a failed load leaves the weights as they were.

A worker with several adapters saves and loads one at a time: the checkpoint holds that adapter's parameters and
optimiser state under peft's `default` name (adapters.stored_name), so it loads into any adapter of the same shape
(and checkpoints of a single-adapter worker, named `default`, load into each), and its PEFT folder sits at the
checkpoint folder itself, where PeftModel.from_pretrained and vLLM's /v1/load_lora_adapter read it."""

import json
import os
import tempfile
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.metadata import TensorStorageMetadata
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_state_dict,
)

from . import adapters
from .errors import CheckpointInvalid, CheckpointMissing
from .model import Policy

STATE_FILE = "arclight.json"
SHARDED_DIR = "sharded"
FORMAT = 2


def save_checkpoint(
    policy: Policy, optimizer: torch.optim.Optimizer, policy_version: int, directory: str, adapter: str | None = None
) -> None:
    """Writes the checkpoint of the whole model, or of `adapter` (with LoRA; None: full weights), to `directory`
    (created if missing); `optimizer` is the one that trains it. Every rank calls it."""
    path = Path(directory)
    options = _options(policy)
    model_state, optimizer_state = _stored(*get_state_dict(policy.module, optimizer, options=options), adapter)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=str(path / SHARDED_DIR))
    full = get_model_state_dict(
        policy.module, options=StateDictOptions(full_state_dict=True, cpu_offload=True, ignore_frozen_params=options.ignore_frozen_params)
    )
    if policy.ranks.rank == 0:
        weights = {name.removeprefix("lm."): value for name, value in full.items()}
        if adapter is None:
            policy.model.save_pretrained(str(path), state_dict=weights, safe_serialization=True)
        else:
            _save_adapter_folder(policy, weights, path, adapter)
        policy.tokenizer.save_pretrained(str(path))
        lora = None if policy.lora is None else {"rank": policy.lora.rank, "alpha": policy.lora.alpha}
        state = {"format": FORMAT, "policy_version": policy_version, "lora": lora, "adapter": adapter}
        state["world_size"] = policy.ranks.world_size
        (path / STATE_FILE).write_text(json.dumps(state) + "\n")
    dist.barrier()


def _save_adapter_folder(policy: Policy, weights: dict, path: Path, adapter: str) -> None:
    """`adapter`'s PEFT folder (adapter_config.json + adapter_model.safetensors, keys without the adapter's name) at
    `path` itself: peft's save_pretrained puts an adapter not named `default` in a subfolder, so it writes to a
    scratch folder first and the files are moved up."""
    own = {k: v for k, v in weights.items() if adapters.owner(k) == adapter}
    path.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path, prefix=".peft-") as scratch:
        policy.model.save_pretrained(scratch, state_dict=own, safe_serialization=True, selected_adapters=[adapter])
        for folder in [f for f in {Path(scratch), Path(scratch) / adapter} if f.is_dir()]:
            for file in folder.iterdir():
                if file.is_file():
                    os.replace(file, path / file.name)


def load_checkpoint(
    policy: Policy, optimizer: torch.optim.Optimizer, directory: str, adapter: str | None = None
) -> None:
    """Loads weights, or into `adapter` (with LoRA; None: full weights), and `optimizer`'s state, written by
    `save_checkpoint` at any world size and from any adapter of the same shape; every rank calls it.

    Raises CheckpointMissing when nothing is at `directory`, CheckpointInvalid for anything else wrong with it."""
    path = Path(directory)
    if not path.exists():
        raise CheckpointMissing(f"checkpoint {directory}: nothing there")
    if not (path / STATE_FILE).is_file():
        raise CheckpointInvalid(f"checkpoint {directory}: no {STATE_FILE} (not an arclight checkpoint)")
    state = json.loads((path / STATE_FILE).read_text())
    if (state.get("lora") is None) != (policy.lora is None):
        kind = "a LoRA adapter" if state.get("lora") else "full weights"
        raise CheckpointInvalid(f"checkpoint {directory}: holds {kind}, the worker {_describe(policy)}")
    if state.get("format") != FORMAT or not (path / SHARDED_DIR).is_dir():
        raise CheckpointInvalid(
            f"checkpoint {directory}: format {state.get('format')} without a {SHARDED_DIR}/ copy (written by an older "
            "arclight-torch; its Hugging Face folder loads as --model)"
        )
    options = _options(policy)
    model_state, optimizer_state = get_state_dict(policy.module, optimizer, options=options)
    names = None
    if adapter is not None:
        names = {adapters.stored_name(k, adapter): k for k in model_state if adapters.owner(k) == adapter}
    stored_model, stored_optimizer = _stored(model_state, optimizer_state, adapter)
    _check(stored_model, path / SHARDED_DIR, directory)
    try:
        dcp.load({"model": stored_model, "optimizer": stored_optimizer}, checkpoint_id=str(path / SHARDED_DIR))
    except (OSError, RuntimeError, ValueError) as error:
        raise CheckpointInvalid(f"checkpoint {directory}: cannot read ({error})") from error
    if names is not None:  # back to the adapter's own names (dcp.load replaced the non-tensor values in place)
        stored_model, stored_optimizer = _renamed(stored_model, stored_optimizer, names.__getitem__)
    set_state_dict(
        policy.module, optimizer, model_state_dict=stored_model, optim_state_dict=stored_optimizer, options=options
    )


def _stored(model_state: dict, optimizer_state: dict, adapter: str | None) -> tuple[dict, dict]:
    """The state dicts as a checkpoint stores them: unchanged for full weights; for an adapter, its own parameters
    alone (the model's state dict holds every adapter's) under the `default` name."""
    if adapter is None:
        return model_state, optimizer_state
    own = {k: v for k, v in model_state.items() if adapters.owner(k) == adapter}
    return _renamed(own, optimizer_state, lambda key: adapters.stored_name(key, adapter))


def _renamed(model_state: dict, optimizer_state: dict, rename) -> tuple[dict, dict]:
    """Both state dicts with every parameter name passed through `rename` (the optimiser's `state` is keyed by
    parameter name and its `param_groups` list them)."""
    groups = [group | {"params": [rename(k) for k in group["params"]]} for group in optimizer_state["param_groups"]]
    return (
        {rename(k): v for k, v in model_state.items()},
        {"state": {rename(k): v for k, v in optimizer_state["state"].items()}, "param_groups": groups},
    )


def _options(policy: Policy) -> StateDictOptions:
    # A LoRA run's checkpoint holds the adapters only: the frozen base is the model it started from (`_check` has
    # made sure beforehand that every adapter tensor is there, so the non-strict load misses none).
    lora = policy.lora is not None
    return StateDictOptions(ignore_frozen_params=lora, strict=not lora)


def _describe(policy: Policy) -> str:
    return "trains LoRA adapters" if policy.lora else "trains full weights"


def _check(expected: dict, sharded: Path, directory: str) -> None:
    """Every expected tensor is in the sharded copy with the same (global) shape, and nothing else is."""
    try:
        stored = dcp.FileSystemReader(str(sharded)).read_metadata().state_dict_metadata
    except (OSError, RuntimeError, ValueError) as error:
        raise CheckpointInvalid(f"checkpoint {directory}: cannot read ({error})") from error
    shapes = {
        k.removeprefix("model."): tuple(v.size)
        for k, v in stored.items()
        if k.startswith("model.") and isinstance(v, TensorStorageMetadata)
    }
    missing, extra = sorted(set(expected) - set(shapes)), sorted(set(shapes) - set(expected))
    if missing or extra:
        raise CheckpointInvalid(f"checkpoint {directory}: missing {missing[:3]}, unexpected {extra[:3]} (another model?)")
    for name, value in expected.items():
        if tuple(value.shape) != shapes[name]:
            raise CheckpointInvalid(f"checkpoint {directory}: {name} has shape {shapes[name]}, the model {tuple(value.shape)}")
