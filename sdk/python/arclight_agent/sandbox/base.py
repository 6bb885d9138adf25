"""The sandbox interface: a shell in a task's repository, isolated from the host, with limits and a reset."""

from __future__ import annotations

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
