"""Checks a tasks JSONL file before training on it: each task's sandbox opens, its fail-to-pass tests fail and its
pass-to-pass tests pass at the snapshot (no change: reward 0.0), and its reference fix, when it has one, scores 1.0.

    python -m recipes.swe.check_tasks tasks.jsonl [--limit N] [--backend local]

Prints one JSON line per task and a summary; exits 1 when a task fails a check, 2 on a file that does not load.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from arclight_agent.sandbox import BACKENDS, SandboxError, SweTask, load_tasks, open_sandbox

from .reward import grade


def check_task(task: SweTask, backend: str = "local") -> dict[str, Any]:
    """What one task does with no change and with its reference fix; `problems` lists every check it fails."""
    problems: list[str] = []
    result: dict[str, Any] = {"id": task.id}
    started = time.monotonic()
    try:
        with open_sandbox(task, backend) as box:
            result["sandbox_start_seconds"] = round(time.monotonic() - started, 3)
            unchanged = grade(box, task, diff="")
            result["no_change_reward"] = unchanged.reward
            passing = [t for t in task.fail_to_pass if unchanged.statuses.get(t) == "PASSED"]
            broken = [t for t in task.pass_to_pass if unchanged.statuses.get(t) != "PASSED"]
            if passing:
                problems.append(f"fail-to-pass tests already pass at the snapshot: {passing[:5]}")
            if broken:
                problems.append("pass-to-pass tests do not pass at the snapshot: "
                                f"{[(t, unchanged.statuses.get(t, 'not run')) for t in broken[:5]]}")
            if task.reference_patch is None:
                result["reference_reward"] = None
            else:
                fixed = grade(box, task, diff=task.reference_patch)
                result["reference_reward"] = fixed.reward
                if fixed.reward != 1.0:
                    problems.append(f"the reference fix scores {fixed.reward}: {fixed.reason}")
    except SandboxError as err:
        problems.append(str(err))
    result["seconds"] = round(time.monotonic() - started, 3)
    result["problems"] = problems
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", type=Path, help="a tasks JSONL file (docs/sandboxes.md#tasks)")
    parser.add_argument("--limit", type=int, help="check the first N tasks only")
    parser.add_argument("--backend", default="local", choices=BACKENDS, help="sandbox backend (default: local)")
    args = parser.parse_args(argv)
    try:
        tasks = load_tasks(args.tasks, args.limit)
    except (OSError, ValueError) as err:
        parser.exit(2, f"check_tasks: {err}\n")
    if not tasks:
        parser.exit(2, f"check_tasks: {args.tasks}: no tasks\n")
    bad = 0
    for task in tasks:
        result = check_task(task, args.backend)
        bad += bool(result["problems"])
        print(json.dumps(result), flush=True)
    print(json.dumps({"tasks": len(tasks), "ok": len(tasks) - bad, "failed": bad}))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
