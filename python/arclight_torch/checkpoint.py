"""Checkpoints in Hugging Face's layout: a full fine-tune saves the model with `save_pretrained` (config.json +
safetensors, loadable by transformers and vLLM), a LoRA run saves its PEFT adapter (adapter_config.json +
adapter_model.safetensors, loadable by peft and vLLM's LoRA loader). Both add the tokenizer, `optimizer.pt` (AdamW
state, so training resumes exactly) and `arclight.json` (policy version, LoRA settings). A load checks every tensor's
name and shape before assigning any, so a failed load leaves the weights as they were."""

import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from .errors import CheckpointInvalid, CheckpointMissing
from .model import Policy

STATE_FILE = "arclight.json"
OPTIMIZER_FILE = "optimizer.pt"


def save_checkpoint(policy: Policy, optimizer: torch.optim.Optimizer, policy_version: int, directory: str) -> None:
    """Writes the checkpoint to `directory` (created if missing)."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    policy.model.save_pretrained(str(path), safe_serialization=True)
    policy.tokenizer.save_pretrained(str(path))
    torch.save(optimizer.state_dict(), path / OPTIMIZER_FILE)
    lora = None if policy.lora is None else {"rank": policy.lora.rank, "alpha": policy.lora.alpha}
    state = {"format": 1, "policy_version": policy_version, "lora": lora}
    (path / STATE_FILE).write_text(json.dumps(state) + "\n")


def load_checkpoint(policy: Policy, optimizer: torch.optim.Optimizer, directory: str) -> None:
    """Loads weights (or adapter) and optimiser state written by `save_checkpoint` into `policy` and `optimizer`.

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
    try:
        tensors = _read_tensors(path, lora=policy.lora is not None)
        optimizer_state = torch.load(path / OPTIMIZER_FILE, map_location=policy.device, weights_only=True)
    except (OSError, RuntimeError, ValueError) as error:
        raise CheckpointInvalid(f"checkpoint {directory}: cannot read ({error})") from error
    if policy.lora is not None:
        _assign_adapter(policy, tensors, directory)
    else:
        _assign_full(policy, tensors, directory)
    optimizer.load_state_dict(optimizer_state)


def _describe(policy: Policy) -> str:
    return "trains LoRA adapters" if policy.lora else "trains full weights"


def _read_tensors(path: Path, *, lora: bool) -> dict[str, torch.Tensor]:
    if lora:
        return load_file(path / "adapter_model.safetensors")
    files = sorted(f for f in path.glob("*.safetensors") if not f.name.startswith("adapter_"))
    if not files:
        raise OSError("no *.safetensors weights")
    tensors: dict[str, torch.Tensor] = {}
    for file in files:
        tensors |= load_file(file)
    return tensors


def _assign_full(policy: Policy, tensors: dict[str, torch.Tensor], directory: str) -> None:
    expected = policy.model.state_dict()
    tied = {"lm_head.weight"} if getattr(policy.model.config, "tie_word_embeddings", False) else set()
    _check(expected, tensors, tied, directory)
    with torch.no_grad():
        for name, value in tensors.items():
            expected[name].copy_(value)


def _assign_adapter(policy: Policy, tensors: dict[str, torch.Tensor], directory: str) -> None:
    from peft import get_peft_model_state_dict, set_peft_model_state_dict

    expected = get_peft_model_state_dict(policy.model)
    _check(expected, tensors, set(), directory)
    set_peft_model_state_dict(policy.model, tensors)


def _check(expected: dict, tensors: dict, may_lack: set[str], directory: str) -> None:
    missing = sorted(set(expected) - set(tensors) - may_lack)
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        raise CheckpointInvalid(f"checkpoint {directory}: missing {missing[:3]}, unexpected {extra[:3]} (another model?)")
    for name, value in tensors.items():
        if tuple(value.shape) != tuple(expected[name].shape):
            raise CheckpointInvalid(
                f"checkpoint {directory}: {name} has shape {tuple(value.shape)}, the model {tuple(expected[name].shape)}"
            )
