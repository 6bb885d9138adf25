"""The remote-engine protocol, version 1, on the worker's side: request shapes and their validation (the TS side is
src/engine/remote/protocol.ts; docs/torch-engine.md documents both). Wire names are snake_case. A request that does
not fit raises `InvalidRequest`, which the server answers with 422 and FastAPI's `{"detail": [{loc, msg, type}]}`.
Written without pydantic so the worker needs nothing beyond torch, transformers, peft and safetensors.

generate, logprobs, train_step, save/load_checkpoint and reset_optimizer take an optional `adapter` (a name, or
`base` for generate and logprobs): `parse_adapter` reads it, the worker resolves it."""

from dataclasses import dataclass
from typing import Any, Literal

PROTOCOL_VERSION = 1


class InvalidRequest(Exception):
    """A request body that does not match the protocol; `errors` are FastAPI-style `{loc, msg, type}` items."""

    def __init__(self, errors: list[dict[str, Any]]):
        super().__init__("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors))
        self.errors = errors


def _fail(loc: list, msg: str, kind: str = "value_error") -> InvalidRequest:
    return InvalidRequest([{"loc": ["body", *loc], "msg": msg, "type": kind}])


def _number(value: Any, loc: list, *, integer: bool = False, low: float | None = None) -> float:
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok:
        raise _fail(loc, "Input should be an integer" if integer else "Input should be a number", "type_error")
    if value != value or value in (float("inf"), float("-inf")):
        raise _fail(loc, "Input should be a finite number")
    if low is not None and value < low:
        raise _fail(loc, f"Input should be greater than or equal to {low}")
    return value


def _list(value: Any, loc: list, *, integer: bool = False, allow_empty: bool = True) -> list:
    if not isinstance(value, list):
        raise _fail(loc, "Input should be a valid list", "type_error")
    if not allow_empty and not value:
        raise _fail(loc, "List should have at least 1 item")
    return [_number(v, [*loc, i], integer=integer) for i, v in enumerate(value)]


def _object(value: Any, loc: list, allowed: set[str]) -> dict:
    if not isinstance(value, dict):
        raise _fail(loc, "Input should be a valid object", "type_error")
    for key in value:
        if key not in allowed:
            raise _fail([*loc, key], "Extra inputs are not permitted", "extra_forbidden")
    return value


def _required(obj: dict, key: str, loc: list) -> Any:
    if key not in obj:
        raise _fail([*loc, key], "Field required", "missing")
    return obj[key]


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_tokens: int = 16
    stop_token_ids: tuple[int, ...] = ()
    stop: tuple[str, ...] = ()
    seed: int | None = None


@dataclass(frozen=True)
class GenerationRequest:
    prompt_token_ids: list[int]
    sampling: SamplingParams


@dataclass(frozen=True)
class TrainRow:
    token_ids: list[int]
    loss_mask: list[float]
    advantages: list[float]
    old_logprobs: list[float] | None = None
    ref_logprobs: list[float] | None = None
    is_weights: list[float] | None = None
    weight: float | None = None


@dataclass(frozen=True)
class LossConfig:
    kind: Literal["ppo", "sft"]
    aggregation: Literal["token-mean", "weighted", "constant"]
    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip: float | None = None
    kl_coef: float = 0.0
    objective: Literal["ppo", "gspo", "cispo"] = "ppo"
    normalizer: float | None = None  # constant aggregation: the step's denominator


@dataclass(frozen=True)
class OptimizerConfig:
    learning_rate: float
    weight_decay: float = 0.0
    max_grad_norm: float = 0.0
    micro_batch_size: int = 8


def parse_sampling(value: Any, loc: list) -> SamplingParams:
    fields = {"temperature", "top_p", "top_k", "max_tokens", "stop_token_ids", "stop", "seed"}
    obj = _object(value, loc, fields)
    top_p = _number(obj.get("top_p", 1.0), [*loc, "top_p"])
    if not 0 < top_p <= 1:
        raise _fail([*loc, "top_p"], "Input should be in (0, 1]")
    stop = obj.get("stop", [])
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
        raise _fail([*loc, "stop"], "Input should be a list of non-empty strings", "type_error")
    seed = obj.get("seed")
    return SamplingParams(
        temperature=_number(obj.get("temperature", 1.0), [*loc, "temperature"], low=0),
        top_p=top_p,
        # -1 is vLLM's "off" and 0 this protocol's: both keep every token (as the engine server takes them).
        top_k=max(0, int(_number(obj.get("top_k", 0), [*loc, "top_k"], integer=True, low=-1))),
        max_tokens=int(_number(obj.get("max_tokens", 16), [*loc, "max_tokens"], integer=True, low=1)),
        stop_token_ids=tuple(_list(obj.get("stop_token_ids", []), [*loc, "stop_token_ids"], integer=True)),
        stop=tuple(stop),
        seed=None if seed is None else int(_number(seed, [*loc, "seed"], integer=True)),
    )


def parse_generate(body: Any) -> list[GenerationRequest]:
    obj = _object(body, [], {"requests", "adapter"})
    requests = _required(obj, "requests", [])
    if not isinstance(requests, list) or not requests:
        raise _fail(["requests"], "Input should be a non-empty list", "type_error")
    out = []
    for i, item in enumerate(requests):
        loc = ["requests", i]
        req = _object(item, loc, {"prompt_token_ids", "sampling"})
        ids = _list(_required(req, "prompt_token_ids", loc), [*loc, "prompt_token_ids"], integer=True, allow_empty=False)
        out.append(GenerationRequest([int(t) for t in ids], parse_sampling(req.get("sampling", {}), [*loc, "sampling"])))
    return out


def parse_token_rows(body: Any) -> list[list[int]]:
    obj = _object(body, [], {"token_ids", "adapter"})
    rows = _required(obj, "token_ids", [])
    if not isinstance(rows, list):
        raise _fail(["token_ids"], "Input should be a valid list", "type_error")
    return [[int(t) for t in _list(r, ["token_ids", i], integer=True, allow_empty=False)] for i, r in enumerate(rows)]


def parse_train_step(body: Any) -> tuple[list[TrainRow], LossConfig, OptimizerConfig]:
    obj = _object(body, [], {"rows", "loss", "optimizer", "adapter"})
    rows_in = _required(obj, "rows", [])
    if not isinstance(rows_in, list) or not rows_in:
        raise _fail(["rows"], "Input should be a non-empty list", "type_error")
    rows = [_train_row(r, ["rows", i]) for i, r in enumerate(rows_in)]
    return rows, _loss(_required(obj, "loss", []), ["loss"]), _optimizer(_required(obj, "optimizer", []), ["optimizer"])


def _train_row(value: Any, loc: list) -> TrainRow:
    optional = ("old_logprobs", "ref_logprobs", "is_weights")
    obj = _object(value, loc, {"token_ids", "loss_mask", "advantages", "weight", *optional})
    ids = [int(t) for t in _list(_required(obj, "token_ids", loc), [*loc, "token_ids"], integer=True)]
    arrays = {k: _list(obj[k], [*loc, k]) for k in optional if obj.get(k) is not None}
    weight = obj.get("weight")
    return TrainRow(
        token_ids=ids,
        loss_mask=_list(_required(obj, "loss_mask", loc), [*loc, "loss_mask"]),
        advantages=_list(_required(obj, "advantages", loc), [*loc, "advantages"]),
        weight=None if weight is None else _number(weight, [*loc, "weight"]),
        **arrays,
    )


def _loss(value: Any, loc: list) -> LossConfig:
    fields = {"kind", "aggregation", "clip_low", "clip_high", "dual_clip", "kl_coef", "objective", "normalizer"}
    obj = _object(value, loc, fields)
    kind = _required(obj, "kind", loc)
    if kind not in ("ppo", "sft"):
        raise _fail([*loc, "kind"], "Input should be 'ppo' or 'sft'", "literal_error")
    aggregation = _required(obj, "aggregation", loc)
    allowed = ("token-mean", "weighted", "constant") if kind == "ppo" else ("token-mean", "weighted")
    if aggregation not in allowed:
        names = ", ".join(f"'{a}'" for a in allowed)
        raise _fail([*loc, "aggregation"], f"Input should be one of {names}", "literal_error")
    objective = obj.get("objective", "ppo")
    if objective not in ("ppo", "gspo", "cispo"):
        raise _fail([*loc, "objective"], "Input should be 'ppo', 'gspo' or 'cispo'", "literal_error")
    normalizer = obj.get("normalizer")
    if aggregation == "constant" and (normalizer is None or _number(normalizer, [*loc, "normalizer"]) <= 0):
        raise _fail([*loc, "normalizer"], "Input should be greater than 0 for constant aggregation")
    dual = obj.get("dual_clip")
    if dual is not None and _number(dual, [*loc, "dual_clip"]) <= 1:
        raise _fail([*loc, "dual_clip"], "Input should be greater than 1")
    if kind == "sft":
        return LossConfig(kind="sft", aggregation=aggregation)
    return LossConfig(
        kind="ppo",
        aggregation=aggregation,
        clip_low=_number(_required(obj, "clip_low", loc), [*loc, "clip_low"], low=0),
        clip_high=_number(_required(obj, "clip_high", loc), [*loc, "clip_high"], low=0),
        dual_clip=dual,
        kl_coef=_number(obj.get("kl_coef", 0), [*loc, "kl_coef"], low=0),
        objective=objective,
        normalizer=None if normalizer is None else float(normalizer),
    )


def _optimizer(value: Any, loc: list) -> OptimizerConfig:
    obj = _object(value, loc, {"learning_rate", "weight_decay", "max_grad_norm", "micro_batch_size"})
    return OptimizerConfig(
        learning_rate=_number(_required(obj, "learning_rate", loc), [*loc, "learning_rate"], low=0),
        weight_decay=_number(obj.get("weight_decay", 0), [*loc, "weight_decay"], low=0),
        max_grad_norm=_number(obj.get("max_grad_norm", 0), [*loc, "max_grad_norm"], low=0),
        micro_batch_size=int(_number(obj.get("micro_batch_size", 8), [*loc, "micro_batch_size"], integer=True, low=1)),
    )


def parse_adapter(body: Any) -> str | None:
    """The body's `adapter` (None when absent); the other fields are left to the route's own parser."""
    if not isinstance(body, dict) or body.get("adapter") is None:
        return None
    value = body["adapter"]
    if not isinstance(value, str) or not value:
        raise _fail(["adapter"], "Input should be a non-empty string", "type_error")
    return value


def parse_reset(body: Any) -> str | None:
    """reset_optimizer's body: `{}` or `{adapter}`."""
    _object(body, [], {"adapter"})
    return parse_adapter(body)


def parse_dir(body: Any) -> str:
    obj = _object(body, [], {"dir", "adapter"})
    value = _required(obj, "dir", [])
    if not isinstance(value, str) or not value:
        raise _fail(["dir"], "Input should be a non-empty string", "type_error")
    return value


def parse_tokenize(body: Any) -> tuple[str, bool]:
    obj = _object(body, [], {"text", "add_special_tokens"})
    text = _required(obj, "text", [])
    if not isinstance(text, str):
        raise _fail(["text"], "Input should be a valid string", "type_error")
    return text, bool(obj.get("add_special_tokens", False))


def parse_detokenize(body: Any) -> tuple[list[int], bool]:
    obj = _object(body, [], {"token_ids", "skip_special_tokens"})
    ids = _list(_required(obj, "token_ids", []), ["token_ids"], integer=True)
    return [int(t) for t in ids], bool(obj.get("skip_special_tokens", False))


def parse_chat(body: Any) -> tuple[list[dict], list[dict] | None, bool]:
    obj = _object(body, [], {"messages", "tools", "add_generation_prompt"})
    messages = _required(obj, "messages", [])
    if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
        raise _fail(["messages"], "Input should be a list of messages with a role", "type_error")
    tools = obj.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise _fail(["tools"], "Input should be a valid list", "type_error")
    return messages, tools or None, bool(obj.get("add_generation_prompt", True))
