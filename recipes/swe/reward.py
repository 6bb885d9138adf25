"""The test-execution reward: after the agent stops, its diff is re-applied to a reset copy of the task's snapshot
(test files restored, the task's test patch applied), the task's tests run in the sandbox, and the reward is 1.0 when
every fail-to-pass and pass-to-pass test passes, else 0.0 (SWE-bench's resolved criterion)."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from arclight_agent.sandbox import Sandbox, SweTask

SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL|SKIPPED) (\S+)(?: - (.*))?$", re.M)
DIFF_BLOCK = re.compile(r"^diff --git a/(.+?) b/(.+?)$", re.M)
GIT = "git -c core.pager=cat -c core.fsmonitor= -c core.hooksPath=/dev/null --no-pager"
PYTEST_FILES = frozenset({"conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"})
"""Files (by name, in any folder) that configure pytest or plug code into it: an agent's edits to them never count."""
RUNNER_MODULES = frozenset(sys.stdlib_module_names) | {"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging",
                                                       "tomli", "exceptiongroup", "sitecustomize", "usercustomize"}
"""Module names the test runner imports: a new top-level module of that name would shadow it (`python -m` puts the
working directory first on `sys.path`)."""


@dataclass(frozen=True)
class Grade:
    """A graded rollout: the reward, the counts behind it and the agent's diff."""

    reward: float
    fail_to_pass_passed: int
    fail_to_pass_total: int
    pass_to_pass_passed: int
    pass_to_pass_total: int
    diff: str
    reason: str
    statuses: dict[str, str] = field(default_factory=dict)
    test_seconds: float = 0.0

    def metadata(self) -> dict[str, object]:
        """The counts as an event's data (the diff goes in its own event)."""
        return {"reward": self.reward, "fail_to_pass": [self.fail_to_pass_passed, self.fail_to_pass_total],
                "pass_to_pass": [self.pass_to_pass_passed, self.pass_to_pass_total], "reason": self.reason,
                "test_seconds": round(self.test_seconds, 3)}


def parse_pytest(output: str) -> dict[str, str]:
    """Test id -> status from pytest's `-rA` short summary (`PASSED tests/t.py::test_a`, `FAILED id - message`).

    A test listed twice (a failure in its teardown after it passed) keeps its worst status.
    """
    statuses: dict[str, str] = {}
    for status, test_id, _ in SUMMARY.findall(output):
        if statuses.get(test_id) not in ("FAILED", "ERROR"):
            statuses[test_id] = status
    return statuses


def failure_messages(output: str) -> dict[str, str]:
    """Test id -> the one-line reason pytest's `-rA` summary gives for a failure."""
    return {test_id: message for status, test_id, message in SUMMARY.findall(output) if status in ("FAILED", "ERROR")}


def agent_diff(sandbox: Sandbox) -> str:
    """The working directory against the task's snapshot, as `git diff --binary` (new files included).

    :raises RuntimeError: when git cannot produce it (the agent removed the repository's `.git`)
    """
    done = sandbox.exec(f"{GIT} add -A && {GIT} diff --cached --binary --no-ext-diff --no-textconv HEAD", timeout=60)
    if done.exit_code != 0:
        raise RuntimeError(f"git diff failed (exit {done.exit_code}): {done.stderr.strip()[-500:]}")
    return done.stdout


def without_files(diff: str, paths: list[str]) -> str:
    """`diff` less the per-file blocks of `paths` (the tests and the files grading ignores)."""
    if not paths:
        return diff
    starts = [m.start() for m in DIFF_BLOCK.finditer(diff)] + [len(diff)]
    blocks = [diff[a:b] for a, b in zip(starts, starts[1:])]
    keep = [b for b in blocks if not {m.group(1) for m in DIFF_BLOCK.finditer(b)} & set(paths)
            and not {m.group(2) for m in DIFF_BLOCK.finditer(b)} & set(paths)]
    return diff[: starts[0]] + "".join(keep)


def ignored_paths(diff: str, snapshot_top: set[str]) -> list[str]:
    """The paths of `diff` whose changes grading ignores: pytest's configuration and plugin files in any folder,
    and new top-level modules named as one the test runner imports (`snapshot_top`: the snapshot's top-level
    entries, whose own modules may have any name)."""
    paths = {path for m in DIFF_BLOCK.finditer(diff) for path in m.groups()}
    return sorted(path for path in paths if path.split("/")[-1] in PYTEST_FILES or (
        path.split("/")[0].removesuffix(".py") in RUNNER_MODULES and path.split("/")[0] not in snapshot_top))


def apply_patch(sandbox: Sandbox, patch: str, name: str) -> str | None:
    """Applies a patch in the working directory; returns None, or why it did not apply."""
    if not patch.strip():
        return None
    sandbox.write_file(f".arclight-{name}.patch", patch.encode())
    done = sandbox.exec(f"{GIT} apply --whitespace=nowarn .arclight-{name}.patch; rc=$?; rm -f .arclight-{name}.patch; exit $rc")
    return None if done.exit_code == 0 else f"the {name} patch does not apply: {done.stderr.strip()[-500:]}"


def grade(sandbox: Sandbox, task: SweTask, diff: str | None = None) -> Grade:
    """Grades the sandbox's working directory (or `diff`, when given, against the snapshot); resets the sandbox.

    1. take the agent's diff, 2. reset to the snapshot, 3. apply the diff less the test files and `ignored_paths`
    (pytest's configuration and plugins, modules that shadow the runner's), then the task's test patch, 4. run the
    tests, 5. reward 1.0 when every fail-to-pass and pass-to-pass test passed.
    """
    f2p, p2p = len(task.fail_to_pass), len(task.pass_to_pass)
    if diff is None:
        try:
            diff = agent_diff(sandbox)
        except RuntimeError as err:
            return Grade(0.0, 0, f2p, 0, p2p, "", str(err))
    sandbox.reset()
    snapshot_top = set(sandbox.exec(f"{GIT} ls-tree --name-only HEAD").stdout.split("\n"))
    ignored = [*task.test_files, *ignored_paths(diff, snapshot_top)]
    for patch, name in ((without_files(diff, ignored), "agent"), (task.test_patch, "test")):
        problem = apply_patch(sandbox, patch, name)
        if problem:
            return Grade(0.0, 0, f2p, 0, p2p, diff, problem)
    ran = sandbox.exec(task.test_run_command(), timeout=task.test_timeout_seconds)
    statuses = parse_pytest(ran.stdout)
    passed = lambda ids: sum(statuses.get(t) == "PASSED" for t in ids)  # noqa: E731
    f2p_ok, p2p_ok = passed(task.fail_to_pass), passed(task.pass_to_pass)
    reward = 1.0 if f2p_ok == f2p and p2p_ok == p2p else 0.0
    reason = (f"tests timed out after {ran.seconds:.0f} s" if ran.timed_out else
              f"fail-to-pass {f2p_ok}/{f2p}, pass-to-pass {p2p_ok}/{p2p}")
    return Grade(reward, f2p_ok, f2p, p2p_ok, p2p, diff, reason, statuses, ran.seconds)
