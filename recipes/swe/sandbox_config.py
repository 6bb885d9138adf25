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

from arclight_agent.sandbox import Sandbox, SandboxLimits, SweTask, open_sandbox, task_from_row

DATA = Path(__file__).resolve().parent / "data"


def limits_from_env(network: bool | None = None) -> SandboxLimits:
    memory = os.environ.get("SWE_SANDBOX_MEMORY_MB")
    pids = int(os.environ.get("SWE_SANDBOX_PIDS", "256"))
    allow = os.environ.get("SWE_SANDBOX_NETWORK", "0") == "1" if network is None else network
    return SandboxLimits(memory_mb=int(memory) if memory else None, pids=pids or None, network=allow)


def task_of(row: dict[str, Any]) -> SweTask:
    """The rollout input as a task (relative repos resolved against `SWE_DATA_DIR`)."""
    return task_from_row(row, os.environ.get("SWE_DATA_DIR") or DATA)


def open_task_sandbox(task: SweTask, network: bool | None = None) -> Sandbox:
    """The sandbox the environment asks for. :raises SandboxError: see `open_sandbox`"""
    options: dict[str, Any] = json.loads(os.environ.get("SWE_SANDBOX_OPTIONS") or "{}")
    backend = os.environ.get("SWE_SANDBOX_BACKEND", "local")
    return open_sandbox(task, backend, limits=limits_from_env(network), **options)
