"""Builds the policy: a local Hugging Face model folder or a random-initialised model from a bundled config
(`new:NAME`), its tokenizer, optional LoRA adapters (peft), sharded with FSDP2 over the worker's ranks (one rank
included) with float32 master weights and `dtype` as the compute dtype. Never downloads anything."""

import json
import warnings
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from . import adapters
from .distributed import Ranks, init_ranks
from .logprobs import DEFAULT_CHUNK
from .shard import PolicyModule, materialise, shard

ASSETS = resources.files("arclight_torch") / "assets"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class LoraSettings:
    rank: int
    alpha: float
    targets: tuple[str, ...]
    adapters: tuple[str, ...] = ("default",)  # named adapters, each with these settings; the first answers by default


@dataclass
class Policy:
    model: torch.nn.Module  # a PreTrainedModel, or a peft PeftModel around one; its parameters are FSDP shards
    module: PolicyModule  # the FSDP root around `model`: every forward goes through it
    tokenizer: PreTrainedTokenizerBase
    name: str
    context_length: int
    lora: LoraSettings | None
    device: torch.device
    dtype: torch.dtype  # compute dtype; the parameters (masters) and optimizer state are float32
    ranks: Ranks
    activation_checkpointing: bool = False


def bundled_configs() -> list[str]:
    """Names usable as `new:NAME`."""
    return sorted(p.name.removesuffix(".json") for p in (ASSETS / "configs").iterdir() if p.name.endswith(".json"))


def load_policy(
    spec: str,
    *,
    device: str = "cpu",
    dtype: str = "float32",
    lora: LoraSettings | None = None,
    seed: int = 0,
    context_length: int | None = None,
    activation_checkpointing: bool = False,
    logprob_chunk: int = DEFAULT_CHUNK,
) -> Policy:
    """Loads `spec` (a model folder, or `new:NAME` for a bundled config with random weights from `seed`) and shards
    it: every rank builds the model on the meta device and shards it, rank 0 alone loads the float32 weights and
    hands each rank its shards one decoder layer at a time (`materialise`), so a rank other than 0 never holds more
    than its shards and one tensor in flight.

    Raises ValueError naming the spec when the folder or bundled config does not exist."""
    torch_dtype = DTYPES[dtype]
    ranks = init_ranks(device)
    config, tokenizer, name, build = _source(spec, seed)
    with torch.device("meta"):  # every rank: the model's structure, no storage
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        if lora is not None:
            model = with_lora(model, lora)
    model.eval()  # no dropout: training and sampling see the same function
    module = shard(
        model, compute_dtype=torch_dtype, activation_checkpointing=activation_checkpointing, logprob_chunk=logprob_chunk
    )

    def weights() -> torch.nn.Module:
        full = build()
        return with_lora(full, lora) if lora is not None else full

    materialise(module, weights if ranks.rank == 0 else None, ranks.device, config.num_hidden_layers)
    limit = context_length or int(getattr(model.config, "max_position_embeddings", 2048))
    return Policy(model, module, tokenizer, name, limit, lora, ranks.device, torch_dtype, ranks, activation_checkpointing)


def _source(spec: str, seed: int):
    """(config, tokenizer, name, build): `build()` returns the float32 model on CPU, called on rank 0 only."""
    if spec.startswith("new:"):
        name = spec.removeprefix("new:")
        if name not in bundled_configs():
            raise ValueError(f"--model {spec}: no bundled config {name!r} (have: {', '.join(bundled_configs())})")
        config_dict = json.loads((ASSETS / "configs" / f"{name}.json").read_text())
        config = AutoConfig.for_model(config_dict.pop("model_type"), **config_dict)

        def build() -> PreTrainedModel:
            torch.manual_seed(seed)  # the same weights as a plain seeded from_config, whatever the rank count
            return AutoModelForCausalLM.from_config(config, dtype=torch.float32)

        return config, AutoTokenizer.from_pretrained(str(ASSETS / "tokenizer")), name, build
    path = Path(spec)
    if not (path / "config.json").is_file():
        raise ValueError(f"--model {spec}: not a Hugging Face model folder (no config.json)")
    config = AutoConfig.from_pretrained(path, local_files_only=True)

    def build() -> PreTrainedModel:
        return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, local_files_only=True)

    return config, AutoTokenizer.from_pretrained(path, local_files_only=True), path.name, build


def with_lora(model: PreTrainedModel, lora: LoraSettings) -> torch.nn.Module:
    """Wraps `model` with one fresh LoRA adapter per name of `lora.adapters` (B = 0, so each starts as the base
    function), the first active; only the adapters train, each by its own optimiser (adapters.py)."""
    from peft import LoraConfig, get_peft_model

    def config() -> LoraConfig:
        return LoraConfig(r=lora.rank, lora_alpha=lora.alpha, target_modules=list(lora.targets), lora_dropout=0.0)

    first, *rest = lora.adapters
    with warnings.catch_warnings():
        # peft warns of names inside its prefix 'lora_' ('a', 'lora'): a hazard of its own loader, which arclight's
        # checkpoints do not use (they store every adapter as 'default').
        warnings.filterwarnings("ignore", message="Adapter name .* should not be contained in the prefix")
        peft_model = get_peft_model(model, config(), adapter_name=first)
        for name in rest:
            peft_model.add_adapter(name, config())
    adapters.use(peft_model, first)
    return peft_model


def eos_token_ids(policy: Policy) -> set[int]:
    """Ids that end every sequence: the model's and tokenizer's EOS, and `<|endoftext|>` when the vocabulary has it."""
    ids: set[int] = set()
    configured = getattr(policy.model.config, "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif isinstance(configured, list):
        ids.update(configured)
    if policy.tokenizer.eos_token_id is not None:
        ids.add(policy.tokenizer.eos_token_id)
    endoftext = policy.tokenizer.convert_tokens_to_ids("<|endoftext|>")
    if isinstance(endoftext, int) and endoftext != policy.tokenizer.unk_token_id:
        ids.add(endoftext)
    return ids


def vocab_size(policy: Policy) -> int:
    """Rows of the output layer (ids the model can score)."""
    return int(policy.model.get_output_embeddings().weight.shape[0])  # a DTensor's shape is the global one
