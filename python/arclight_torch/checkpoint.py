"""Checkpoints, two copies in one folder. `sharded/` is torch.distributed.checkpoint's (DCP) copy of the float32
master weights (or LoRA adapters) and the AdamW state, written by every rank in parallel and resharded on load, so a
run resumes exactly on the same or another number of ranks. Beside it, rank 0 writes the consolidated Hugging Face
folder: a full fine-tune's `save_pretrained` (config.json + safetensors, loadable by transformers and vLLM) or a
LoRA run's PEFT adapter (adapter_config.json + adapter_model.safetensors), the tokenizer, and `arclight.json`
(format, policy version, LoRA settings, world size). A load checks every tensor's name and shape against the
sharded copy's metadata before reading any, so a failed load leaves the weights as they were."""

import json
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

from .errors import CheckpointInvalid, CheckpointMissing
from .model import Policy

STATE_FILE = "arclight.json"
SHARDED_DIR = "sharded"
FORMAT = 2


def save_checkpoint(policy: Policy, optimizer: torch.optim.Optimizer, policy_version: int, directory: str) -> None:
    """Writes the checkpoint to `directory` (created if missing); every rank calls it."""
    path = Path(directory)
    options = _options(policy)
    model_state, optimizer_state = get_state_dict(policy.module, optimizer, options=options)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=str(path / SHARDED_DIR))
    full = get_model_state_dict(
        policy.module, options=StateDictOptions(full_state_dict=True, cpu_offload=True, ignore_frozen_params=options.ignore_frozen_params)
    )
    if policy.ranks.rank == 0:
        weights = {name.removeprefix("lm."): value for name, value in full.items()}
        policy.model.save_pretrained(str(path), state_dict=weights, safe_serialization=True)
        policy.tokenizer.save_pretrained(str(path))
        lora = None if policy.lora is None else {"rank": policy.lora.rank, "alpha": policy.lora.alpha}
        state = {"format": FORMAT, "policy_version": policy_version, "lora": lora, "world_size": policy.ranks.world_size}
        (path / STATE_FILE).write_text(json.dumps(state) + "\n")
    dist.barrier()


def load_checkpoint(policy: Policy, optimizer: torch.optim.Optimizer, directory: str) -> None:
    """Loads weights (or adapters) and optimiser state written by `save_checkpoint`, at any world size; every rank
    calls it.

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
    _check(model_state, path / SHARDED_DIR, directory)
    try:
        dcp.load({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=str(path / SHARDED_DIR))
    except (OSError, RuntimeError, ValueError) as error:
        raise CheckpointInvalid(f"checkpoint {directory}: cannot read ({error})") from error
    set_state_dict(
        policy.module, optimizer, model_state_dict=model_state, optim_state_dict=optimizer_state, options=options
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
