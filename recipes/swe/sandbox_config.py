"""Which sandbox a recipe agent opens, from its environment, so the agents run unchanged on every backend.

`SWE_SANDBOX_BACKEND` (`local` by default, or `kubernetes`), `SWE_SANDBOX_NETWORK` (`1` lets commands reach the
network), `SWE_SANDBOX_MEMORY_MB`, `SWE_SANDBOX_PIDS` (default 256; `0` for none), `SWE_SANDBOX_OPTIONS` (a JSON
object of further backend options, e.g. the Kubernetes namespace), `SWE_DATA_DIR` (what relative task repos are
relative to; default this recipe's `data/`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from arclight_agent.sandbox import Sandbox, SandboxError, SandboxLimits, SweTask, open_sandbox, task_from_row

DATA = Path(__file__).resolve().parent / "data"


def _env_int(name: str, default: str | None) -> int | None:
    text = os.environ.get(name) or default
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r}: not an integer") from None


def limits_from_env(network: bool | None = None) -> SandboxLimits:
    """The limits `SWE_SANDBOX_*` ask for. :raises ValueError: naming a variable that is not an integer"""
    memory = _env_int("SWE_SANDBOX_MEMORY_MB", None)
    pids = _env_int("SWE_SANDBOX_PIDS", "256")
    allow = os.environ.get("SWE_SANDBOX_NETWORK", "0") == "1" if network is None else network
    return SandboxLimits(memory_mb=memory or None, pids=pids or None, network=allow)


def task_of(row: dict[str, Any]) -> SweTask:
    """The rollout input as a task (relative repos resolved against `SWE_DATA_DIR`)."""
    return task_from_row(row, os.environ.get("SWE_DATA_DIR") or DATA)


def open_task_sandbox(task: SweTask, network: bool | None = None) -> Sandbox:
    """The sandbox the environment asks for.

    :raises SandboxError: see `open_sandbox`; for `local`, a repo that is not a directory, naming `SWE_DATA_DIR`
    :raises ValueError: `SWE_SANDBOX_OPTIONS` not a JSON object, or a limit that is not an integer
    """
    try:
        options = json.loads(os.environ.get("SWE_SANDBOX_OPTIONS") or "{}")
    except json.JSONDecodeError as err:
        raise ValueError(f"SWE_SANDBOX_OPTIONS is not JSON ({err.msg})") from None
    if not isinstance(options, dict):
        raise ValueError("SWE_SANDBOX_OPTIONS must be a JSON object of backend options")
    backend = os.environ.get("SWE_SANDBOX_BACKEND", "local")
    if backend == "local" and task.repo and not Path(task.repo).is_dir():
        raise SandboxError(f"task {task.id}: its repo {task.repo} is not a directory; a relative repo is resolved "
                           f"against SWE_DATA_DIR ({os.environ.get('SWE_DATA_DIR') or DATA}): set it to the folder "
                           "the tasks' JSONL file is in")
    return open_sandbox(task, backend, limits=limits_from_env(network), **options)
