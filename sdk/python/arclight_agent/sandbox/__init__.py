"""Sandboxes for coding agents: `open_sandbox(task, backend)` gives a shell in a throw-away copy of the task's
repository, isolated from the host (`local`: Linux namespaces with bubblewrap; `kubernetes`: one pod per sandbox)."""

from __future__ import annotations

import importlib
from typing import Any

from .base import ExecResult, Sandbox, SandboxError, SandboxLimits
from .task import SweTask, load_tasks, task_from_row

BACKENDS = ("local", "kubernetes")


def open_sandbox(task: SweTask, backend: str = "local", **options: Any) -> Sandbox:
    """Starts a sandbox for `task`: its repository at the task's snapshot, ready for `exec`.

    :param backend: `local` (bubblewrap, needs `task.repo`) or `kubernetes` (a pod from `task.image`)
    :param options: the backend's options, e.g. `limits=SandboxLimits(...)`
    :raises SandboxError: when the backend cannot isolate or start (never a fallback to the host)
    :raises ValueError: an unknown backend
    """
    if backend == "local":
        from .local import LocalSandbox

        return LocalSandbox(task, **options)
    if backend == "kubernetes":
        try:
            module = importlib.import_module(f"{__name__}.kubernetes")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.kubernetes":
                raise SandboxError(f"the kubernetes sandbox backend cannot load: {err}") from err
            raise SandboxError("the kubernetes sandbox backend is not installed (arclight_agent/sandbox/kubernetes.py)") from err
        return module.KubernetesSandbox(task, **options)
    raise ValueError(f"unknown sandbox backend {backend!r}: expected one of {', '.join(BACKENDS)}")


__all__ = ["BACKENDS", "ExecResult", "Sandbox", "SandboxError", "SandboxLimits", "SweTask", "load_tasks",
           "open_sandbox", "task_from_row"]
