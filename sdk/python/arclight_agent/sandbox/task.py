"""SWE-style tasks: a repository snapshot (a directory, or an image for Kubernetes), a problem statement, the tests
that must go from failing to passing and those that must keep passing, and how to run them. One task a JSONL line."""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

DEFAULT_TEST_COMMAND = "python3 -m pytest -rA -p no:cacheprovider {tests}"
"""`{tests}` becomes the shell-quoted test ids; pytest's `-rA` summary lines (`PASSED id`, `FAILED id`) are graded."""


@dataclass(frozen=True)
class SweTask:
    """One task.

    `repo` is a directory holding the repository (a git checkout or plain files; relative paths in a JSONL file are
    relative to that file), `image` the container image of the Kubernetes backend; at least one is set.
    `base_commit` is checked out first (`repo` must then be a git checkout); commits the snapshot does not descend
    from are removed, so a clone's later commits (the fix) cannot be read. `start_patch` (a unified diff) is applied
    after it to make the task's starting state (SWE-smith's bug patch), then `setup` runs; the result is the snapshot
    that `reset()` returns to and that the agent's diff is taken against. Before grading, `test_files` are restored
    from the snapshot and `test_patch` (SWE-bench's) is applied, so the agent cannot pass by editing the tests.
    `reference_patch` solves the task from the snapshot.
    """

    id: str
    problem_statement: str
    fail_to_pass: list[str]
    pass_to_pass: list[str] = field(default_factory=list)
    repo: str | None = None
    image: str | None = None
    base_commit: str | None = None
    start_patch: str = ""
    setup: str | None = None
    test_command: str = DEFAULT_TEST_COMMAND
    test_patch: str = ""
    test_files: list[str] = field(default_factory=list)
    workdir: str = "/testbed"
    timeout_seconds: float = 60.0
    """Default time limit of one command of the agent."""
    test_timeout_seconds: float = 300.0
    """Time limit of setup and of the grading test run."""
    reference_patch: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("a task needs an id")
        if not self.repo and not self.image:
            raise ValueError(f"task {self.id}: needs a repo directory or an image")
        if not self.fail_to_pass:
            raise ValueError(f"task {self.id}: fail_to_pass is empty (nothing would show the task solved)")
        if "{tests}" not in self.test_command:
            raise ValueError(f"task {self.id}: test_command has no {{tests}} placeholder: {self.test_command!r}")

    def test_run_command(self) -> str:
        """The shell command that runs every fail-to-pass and pass-to-pass test."""
        ids = " ".join(shlex.quote(t) for t in [*self.fail_to_pass, *self.pass_to_pass])
        return self.test_command.replace("{tests}", ids)

    def to_row(self) -> dict[str, Any]:
        """The task as a JSONL row (the inverse of `task_from_row`)."""
        return asdict(self)


FIELDS = {f.name for f in fields(SweTask)}
TEXT_FIELDS = {"id", "problem_statement", "repo", "image", "base_commit", "start_patch", "setup", "test_command",
               "test_patch", "workdir", "reference_patch"}
OPTIONAL_TEXT_FIELDS = {"repo", "image", "base_commit", "setup", "reference_patch"}
SECONDS_FIELDS = {"timeout_seconds", "test_timeout_seconds"}


def task_from_row(row: dict[str, Any], base_dir: str | Path | None = None) -> SweTask:
    """A task from a JSONL row (a rollout's input); a relative `repo` is resolved against `base_dir`.

    Keys that are not task fields (e.g. a rollout input's `data_id`) are ignored.
    :raises ValueError: a row without the required fields, or with a bad field
    """
    if not isinstance(row, dict):
        raise ValueError(f"a task row is a JSON object, got {type(row).__name__}")
    missing = [k for k in ("id", "problem_statement", "fail_to_pass") if k not in row]
    if missing:
        named = f"task {row['id']}" if isinstance(row.get("id"), str) else "a task row"
        raise ValueError(f"{named} needs {', '.join(missing)}")
    values = {k: v for k, v in row.items() if k in FIELDS}
    repo = values.get("repo")
    if repo and base_dir is not None and not Path(repo).is_absolute():
        values["repo"] = str((Path(base_dir) / repo).resolve())
    for key in ("fail_to_pass", "pass_to_pass", "test_files"):
        if key in values and not (isinstance(values[key], list) and all(isinstance(t, str) for t in values[key])):
            raise ValueError(f"task {row['id']}: {key} must be a list of strings")
    for key, value in values.items():
        if key in TEXT_FIELDS and not (isinstance(value, str) or (value is None and key in OPTIONAL_TEXT_FIELDS)):
            raise ValueError(f"task {row['id']}: {key} must be a string, got {json.dumps(value)}")
        if key in SECONDS_FIELDS and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise ValueError(f"task {row['id']}: {key} must be a positive number of seconds, got {json.dumps(value)}")
    if not isinstance(values.get("metadata", {}), dict):
        raise ValueError(f"task {row['id']}: metadata must be a JSON object")
    if not str(values.get("workdir", "/")).startswith("/"):
        raise ValueError(f"task {row['id']}: workdir must be an absolute path, got {values['workdir']!r}")
    return SweTask(**values)


def load_tasks(path: str | Path, limit: int | None = None) -> list[SweTask]:
    """Reads a tasks JSONL file (blank lines skipped); relative repos are relative to the file.

    :raises ValueError: naming the file and line of a row that is not JSON or not a task
    """
    path = Path(path)
    tasks: list[SweTask] = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{number}: not JSON ({err.msg})") from err
        try:
            tasks.append(task_from_row(row, path.parent))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{path}:{number}: {err}") from err
        if limit is not None and len(tasks) >= limit:
            break
    return tasks
