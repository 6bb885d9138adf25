"""The sandbox interface: a shell in a task's repository, isolated from the host, with limits and a reset."""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ExecResult:
    """One command's outcome. `exit_code` is -9 (SIGKILL) when the command ran past its time limit."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of every command in a sandbox (`None`: no limit).

    `cpu_seconds` is CPU time per process (RLIMIT_CPU), `memory_mb` the address space per process (RLIMIT_AS)
    and the size of each in-memory file system (`/tmp`, `/dev/shm`),
    `pids` the processes and threads of one command at once; `network` lets commands reach the network (default: a
    network namespace with loopback only).
    """

    cpu_seconds: float | None = None
    memory_mb: int | None = None
    pids: int | None = 256
    network: bool = False

    def __post_init__(self) -> None:
        for name in ("memory_mb", "pids"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"SandboxLimits.{name} must be a whole number of at least 1 or None, got {value!r}")
        seconds = self.cpu_seconds
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0):
            raise ValueError(f"SandboxLimits.cpu_seconds must be a positive number or None, got {seconds!r}")


def snapshot_script(base_commit: str | None, start_patch: bool, setup: str | None) -> str:
    """The shell script that makes a task's snapshot in its working directory, one command a line under `set -e`.

    Checks out `base_commit`; applies `.arclight-start.patch` when `start_patch` (the caller has written it) and drops
    the whole history, else removes every commit the snapshot does not descend from (in a clone, the fix itself: with
    every ref, reflog and pseudo-ref that reaches it, so `git log --all` or `git show SHA` cannot reveal it); runs
    `setup`; commits the result.
    """
    # One command a line: `set -e` does not stop at a failure inside an `a && b` list.
    steps = ["set -e"]
    if base_commit:
        steps += [f"git -c advice.detachedHead=false checkout -q -f {shlex.quote(base_commit)}", "git clean -qfdx"]
    if start_patch:
        steps += ["git apply --whitespace=nowarn .arclight-start.patch", "rm -f .arclight-start.patch", "rm -rf .git"]
    else:
        steps += ["if [ -d .git ]; then",
                  'if head=$(git rev-parse -q --verify HEAD); then git update-ref --no-deref HEAD "$head"; fi',
                  "git for-each-ref --format='delete %(refname)' | git update-ref --no-deref --stdin",
                  "rm -f .git/ORIG_HEAD .git/FETCH_HEAD .git/MERGE_HEAD .git/CHERRY_PICK_HEAD",
                  "git reflog expire --expire=now --all", "git gc -q --prune=now", "fi"]
    if setup:
        steps.append(setup)
    steps += ["[ -d .git ] || git init -q", "git add -A", "git commit -q --allow-empty --no-verify -m snapshot"]
    return "\n".join(steps)


class SandboxError(RuntimeError):
    """The sandbox cannot isolate (no bubblewrap, no namespaces, no cluster), cannot start, or is closed."""


class Sandbox(ABC):
    """A throw-away copy of a task's repository with a shell in it; a context manager whose exit calls `close()`.

    Paths of `read_file` / `write_file` are relative to the task's working directory and may not leave it.
    """

    @abstractmethod
    def exec(self, cmd: str, timeout: float = 60.0) -> ExecResult:
        """Runs `bash -lc cmd` in the working directory; at `timeout` seconds the whole process tree is killed.

        :raises SandboxError: when the sandbox is closed or the command cannot be started
        """

    @abstractmethod
    def read_file(self, path: str) -> bytes:
        """The bytes of a file of the working directory.

        :raises FileNotFoundError: when there is no such file
        :raises SandboxError: when `path` leaves the working directory, or the sandbox is closed
        """

    @abstractmethod
    def write_file(self, path: str, data: bytes) -> None:
        """Writes a file of the working directory (parents made as needed).

        :raises SandboxError: when `path` leaves the working directory, or the sandbox is closed
        """

    @abstractmethod
    def reset(self) -> None:
        """Puts the working directory back to the task's snapshot (after setup and the task's start patch)."""

    @abstractmethod
    def close(self) -> None:
        """Stops every process and removes everything the sandbox made; calling it again does nothing."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
