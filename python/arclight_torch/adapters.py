"""Several named LoRA adapters on one base model: which one a forward pass uses, which parameters belong to each,
and the adapter-neutral names a checkpoint stores them under.

Every adapter's parameters keep `requires_grad` True at all times, whichever adapter is active. peft's own switch
(`set_adapter`, `disable_adapter_layers`) also freezes the inactive adapters, but FSDP2 fixes each parameter's
`requires_grad` when it first all-gathers it, so parameter flags that changed from one operation to the next would
disagree with the unsharded copies FSDP2 computes with. Keeping them all trainable is safe because an inactive
adapter takes no part in the forward pass: it gets no gradient (`.grad` stays None, FSDP2 reduce-scatters only
parameters that have one), and each adapter's optimiser holds that adapter's parameters alone."""

import re

import torch

BASE = "base"  # the base model with every adapter disabled (generate and logprobs only)
DEFAULT = "default"  # peft's adapter name; checkpoints store every adapter under it
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def name_error(names: list[str]) -> str | None:
    """What is wrong with a list of adapter names, or None: each must match NAME (no dots: torch's module names cannot
    hold one), be unique and not be `base`."""
    if not names:
        return "expected one or more names"
    for name in names:
        if not NAME.match(name):
            return f"{name!r} is not a name (letters, digits, '_' and '-', starting with a letter or digit)"
        if name == BASE:
            return f"{BASE!r} is reserved (the base model with adapters disabled)"
    duplicates = sorted({n for n in names if names.count(n) > 1})
    return f"{duplicates[0]!r} is named twice" if duplicates else None


def use(model: torch.nn.Module, adapter: str | None) -> None:
    """Makes `adapter` the one every LoRA layer of `model` (a peft model) applies, or disables them all (None: the
    base model); leaves every adapter parameter trainable (see the module doc)."""
    tuner = model.base_model  # peft's LoraModel
    if adapter is None:
        tuner.disable_adapter_layers()
    else:
        tuner.set_adapter(adapter)
        tuner.enable_adapter_layers()
    for name, param in model.named_parameters():
        if owner(name) is not None:
            param.requires_grad_(True)


def owner(parameter_name: str) -> str | None:
    """The adapter a parameter belongs to (`…q_proj.lora_A.NAME.weight` → NAME), or None for a base weight."""
    parts = parameter_name.split(".")
    for i, part in enumerate(parts[:-1]):
        if part.startswith("lora_"):
            return parts[i + 1]
    return None


def parameters(model: torch.nn.Module, adapter: str) -> list[torch.nn.Parameter]:
    """`adapter`'s parameters, in the model's order."""
    return [p for n, p in model.named_parameters() if owner(n) == adapter]


def stored_name(key: str, adapter: str) -> str:
    """`key` (a parameter's fully qualified name) as a checkpoint stores it: the adapter's name replaced by `default`,
    so a checkpoint written from one adapter loads into any other, and into a single-adapter worker."""
    return re.sub(rf"(\.lora_\w+)\.{re.escape(adapter)}(?=\.|$)", rf"\1.{DEFAULT}", key)
