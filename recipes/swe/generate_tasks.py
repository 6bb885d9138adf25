"""Makes SWE-style tasks here, in the style of SWE-smith: writes small Python projects (`projects.py`), injects bugs
by program mutation (`mutate.py`), runs each project's tests in a sandbox with the bug and again with the reference
fix (the bug patch reversed), and keeps a task only when some tests fail with the bug and all pass with the fix.
Fail-to-pass: the tests the bug breaks; pass-to-pass: the rest.

    python -m recipes.swe.generate_tasks [--out recipes/swe/data] [--seeds 1 2 3] [--per-project 6] [--val-seed 3]

Writes `OUT/projects/<kind>-<seed>/` (the clean projects), `OUT/train.jsonl` and `OUT/val.jsonl` (the projects of
`--val-seed`), and prints tasks made per minute and the share of tried mutants kept.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from arclight_agent.sandbox import BACKENDS, SandboxError, SweTask, open_sandbox

from .mutate import Mutation, mutations, unified_diff
from .projects import KINDS, Project, make_project
from .reward import failure_messages, parse_pytest

HERE = Path(__file__).resolve().parent
TEST_COMMAND = "python3 -m pytest -rA -p no:cacheprovider {tests}"
REVERSE_MARK = "@@arclight-reference-fix@@"


@dataclass
class Stats:
    """What a generation did: mutants tried and kept per reason, and its wall time."""

    tried: int = 0
    kept: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def reject(self, why: str) -> None:
        self.rejected[why] = self.rejected.get(why, 0) + 1

    def summary(self) -> dict[str, object]:
        per_minute = self.kept / self.seconds * 60 if self.seconds else 0.0
        return {"tried": self.tried, "kept": self.kept, "share_kept": round(self.kept / max(self.tried, 1), 3),
                "tasks_per_minute": round(per_minute, 1), "seconds": round(self.seconds, 1), "rejected": self.rejected}


def write_project(project: Project, root: Path) -> Path:
    """Writes the project's files under `root/<name>` (replacing an older copy)."""
    target = root / project.name
    if target.exists():
        shutil.rmtree(target)
    for path, text in project.files.items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_text(text)
    return target


def interleaved(candidates: list[Mutation], seed: str) -> Iterator[Mutation]:
    """The mutants in a seeded order that cycles through the mutation kinds, so a project's tasks mix them."""
    rng = random.Random(seed)
    by_kind: dict[str, list[Mutation]] = {}
    for mutation in candidates:
        by_kind.setdefault(mutation.kind, []).append(mutation)
    for group in by_kind.values():
        rng.shuffle(group)
    kinds = sorted(by_kind)
    while any(by_kind.values()):
        for kind in kinds:
            if by_kind[kind]:
                yield by_kind[kind].pop()


def problem_statement(project: Project, mutation: Mutation, failing: list[str], messages: dict[str, str]) -> str:
    """An issue-style description: which function misbehaves, which tests fail and how (no hint of the change)."""
    shown = "\n".join(f"- `{t}`" + (f": {messages[t][:160]}" if messages.get(t) else "") for t in failing[:5])
    return (f"`{mutation.function}` in `{project.module_path}` gives wrong results. These tests fail:\n{shown}\n\n"
            "Fix the library code (do not edit the tests) so that the whole test suite passes.")


def generate_project(project: Project, repo: Path, per_project: int, stats: Stats, backend: str) -> list[SweTask]:
    """Tasks of one project: its mutants tried in a sandbox until `per_project` are kept."""
    module = project.files[project.module_path]
    probe = SweTask(id=project.name, problem_statement="", fail_to_pass=[project.test_path], repo=str(repo),
                    test_command=TEST_COMMAND)
    kept: list[SweTask] = []
    with open_sandbox(probe, backend) as box:
        baseline = parse_pytest(box.exec(TEST_COMMAND.replace("{tests}", project.test_path), timeout=120).stdout)
        if not baseline or set(baseline.values()) != {"PASSED"}:
            raise RuntimeError(f"project {project.name}: its own tests do not all pass: {baseline}")
        all_tests = sorted(baseline)
        run = TEST_COMMAND.replace("{tests}", " ".join(all_tests))
        for mutation in interleaved(mutations(module), project.name):
            if len(kept) >= per_project:
                break
            stats.tried += 1
            bug = unified_diff(project.module_path, module, mutation.source)
            box.write_file(".bug.patch", bug.encode())
            done = box.exec(f"git apply .bug.patch && {run}; echo {REVERSE_MARK}; git apply -R .bug.patch && {run}; "
                            "rm -f .bug.patch; git status --porcelain", timeout=60)
            with_bug, _, with_fix = done.stdout.partition(REVERSE_MARK)
            before, after = parse_pytest(with_bug), parse_pytest(with_fix)
            failing = [t for t in all_tests if before.get(t) != "PASSED"]
            if done.timed_out or not with_fix:
                stats.reject("timed out")
                box.reset()
            elif not failing:
                stats.reject("no test fails")
            elif any(after.get(t) != "PASSED" for t in all_tests):
                stats.reject("fix does not pass")
            else:
                stats.kept += 1
                kept.append(SweTask(
                    id=f"{project.name}.{len(kept):02d}", problem_statement=problem_statement(
                        project, mutation, failing, failure_messages(with_bug)),
                    fail_to_pass=failing, pass_to_pass=[t for t in all_tests if t not in failing],
                    repo=f"projects/{project.name}", start_patch=bug, test_command=TEST_COMMAND,
                    test_files=[project.test_path], timeout_seconds=30.0, test_timeout_seconds=120.0,
                    reference_patch=unified_diff(project.module_path, mutation.source, module),
                    metadata={"mutation": mutation.kind, "function": mutation.function, "line": mutation.line,
                              "project": project.name, "kind": project.kind}))
            if box.exec("git status --porcelain").stdout.strip():
                box.reset()
    return kept


def generate(out: Path, seeds: list[int], per_project: int, val_seed: int | None, backend: str = "local",
             kinds: list[str] | None = None) -> Stats:
    """Writes the projects and the train/val JSONL files under `out`; returns the statistics."""
    stats, started = Stats(), time.monotonic()
    splits: dict[str, list[SweTask]] = {"train": [], "val": []}
    for seed in seeds:
        for kind in kinds or sorted(KINDS):
            project = make_project(kind, seed)
            repo = write_project(project, out / "projects")
            tasks = generate_project(project, repo, per_project, stats, backend)
            splits["val" if seed == val_seed else "train"].extend(tasks)
    stats.seconds = time.monotonic() - started
    for split, tasks in splits.items():
        if tasks:
            (out / f"{split}.jsonl").write_text("".join(json.dumps(t.to_row()) + "\n" for t in tasks))
    return stats


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE / "data",
                        help="folder for projects/, train.jsonl and val.jsonl (default: the recipe's data/)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3],
                        help="one project of each kind per seed (default: 1 2 3)")
    parser.add_argument("--per-project", type=positive_int, default=6, help="tasks kept per project (default: 6)")
    parser.add_argument("--val-seed", type=int, default=3,
                        help="the seed whose projects' tasks go to val.jsonl (default: 3)")
    parser.add_argument("--kinds", nargs="+", choices=sorted(KINDS), help="project kinds (default: all)")
    parser.add_argument("--backend", default="local", choices=BACKENDS,
                        help="sandbox backend that validates each task (default: local)")
    args = parser.parse_args(argv)
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out}: exists and is not a directory")
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        stats = generate(args.out, args.seeds, args.per_project, args.val_seed, args.backend, args.kinds)
    except SandboxError as err:
        parser.exit(1, f"generate_tasks: {err}\n")
    print(json.dumps(stats.summary()))


if __name__ == "__main__":
    main()
