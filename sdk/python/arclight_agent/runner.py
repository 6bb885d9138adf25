"""The runner of Python `agent_class` rollouts: imports `package.module:ClassName`, makes one instance with no
arguments and calls its Agent Lightning `LitAgent`-shaped method with the rollout's task, resources and rollout."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import math
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from .emit import emit_reward
from .env import AgentEnv, from_env, gateway_url_of
from .http import request_json


class AgentClassError(RuntimeError):
    """The `module:Class` string names nothing runnable."""


@dataclass(frozen=True)
class LLM:
    """The `main_llm` resource: AGL's `LLM` fields, pointing at this attempt's proxy."""

    endpoint: str
    model: str = "policy"
    """The gateway replaces it with its `--model-name` when it has one."""
    api_key: str = ""
    sampling_parameters: dict[str, Any] = field(default_factory=dict)

    def base_url(self, *_: Any) -> str:
        """The OpenAI base URL (AGL's `ProxyLLM.get_base_url`; the proxy URL already names rollout and attempt)."""
        return self.endpoint


def load_class(spec: str) -> type:
    """Imports `package.module:ClassName` (the current directory is on `sys.path`, as for `python -m`).

    :raises AgentClassError: a malformed spec, or an attribute that is not a class
    :raises ImportError: the module cannot be imported
    """
    module_name, colon, class_name = spec.partition(":")
    if not colon or not module_name or not class_name:
        raise AgentClassError(f"agent class {spec!r}: expected package.module:ClassName")
    target: Any = importlib.import_module(module_name)
    for part in class_name.split("."):
        if not hasattr(target, part):
            raise AgentClassError(f"agent class {spec!r}: module {module_name} has no attribute {class_name}")
        target = getattr(target, part)
    if not inspect.isclass(target):
        raise AgentClassError(f"agent class {spec!r}: {class_name} is not a class")
    return target


def fetch_rollout(env: AgentEnv) -> dict[str, Any]:
    """`GET /api/rollouts/{rid}` with the attempt's token: the rollout as stored (input, is_train, metadata, ...)."""
    url = f"{gateway_url_of(env)}/api/rollouts/{urllib.parse.quote(env.rollout_id, safe='')}"
    _, text = request_json(env, "GET", url, None, f"reading rollout {env.rollout_id}")
    return json.loads(text)["rollout"]


def method_for(agent: Any, is_train: bool) -> Any:
    """The method AGL's runner would call: `training_rollout` / `validation_rollout` (or its `_async` twin) by mode when
    the class defines it, else `rollout` / `rollout_async`. Methods that only an `agentlightning` `LitAgent` base class
    defines (its defaults, which delegate or raise) do not count.

    :raises AgentClassError: when none of them is defined
    """
    mode = "training" if is_train else "validation"
    for name in (f"{mode}_rollout", f"{mode}_rollout_async", "rollout", "rollout_async"):
        owner = next((c for c in type(agent).__mro__ if name in vars(c)), None)
        if owner is not None and owner.__name__ != "LitAgent" and callable(getattr(agent, name)):
            return getattr(agent, name)
    raise AgentClassError(f"{type(agent).__name__} defines neither {mode}_rollout() nor rollout() (nor their _async forms)")


def run_agent_class(spec: str, env: AgentEnv | None = None) -> Any:
    """Runs one rollout with the class `spec` names: instance with no arguments, then
    `method(task, resources, rollout)` where `task` is the rollout's `input`, `resources` is `{"main_llm": LLM}` and
    `rollout` the rollout as the gateway stores it (plus `mode`: `train` or `val`). A coroutine is awaited. A finite
    number returned is posted as the attempt's reward; None posts nothing (the agent emitted its own).

    :returns: what the method returned
    :raises NotInRollout: outside a rollout
    :raises AgentClassError: see `load_class` and `method_for`
    :raises TypeError: a return value that is neither None nor a finite number
    """
    env = env or from_env()
    cls = load_class(spec)
    rollout = fetch_rollout(env)
    rollout["mode"] = "train" if rollout.get("is_train", True) else "val"
    resources = {"main_llm": LLM(endpoint=env.base_url, api_key=env.api_key)}
    method = method_for(cls(), rollout["mode"] == "train")
    result = method(rollout.get("input"), resources, rollout)
    if inspect.isawaitable(result):
        result = asyncio.run(_awaited(result))
    if result is None:
        return None
    if isinstance(result, bool) or not isinstance(result, (int, float)) or not math.isfinite(result):
        raise TypeError(f"{cls.__name__}: a rollout method returns a finite number or None, got {result!r}")
    emit_reward(float(result), source=spec, env=env)
    return result


async def _awaited(result: Any) -> Any:
    return await result
