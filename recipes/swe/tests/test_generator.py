"""The task generator's invariants: deterministic projects whose tests pass, single-point mutants of each kind, and
kept tasks whose fail-to-pass tests fail at the snapshot and pass, with everything else, after the reference fix."""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

import pytest
from arclight_agent.sandbox import load_tasks, open_sandbox
from recipes.swe.generate_tasks import HERE, main
from recipes.swe.mutate import mutations, unified_diff
from recipes.swe.projects import KINDS, make_project
from recipes.swe.reward import apply_patch, parse_pytest


def test_projects_are_deterministic_in_kind_and_seed():
    for kind in KINDS:
        assert make_project(kind, 1) == make_project(kind, 1)
        assert make_project(kind, 1).files != make_project(kind, 2).files


def test_every_mutation_kind_occurs_and_each_mutant_changes_one_place():
    kinds = Counter()
    for kind in KINDS:
        project = make_project(kind, 1)
        source = project.files[project.module_path]
        for mutation in mutations(source):
            kinds[mutation.kind] += 1
            ast.parse(mutation.source)
            diff = unified_diff(project.module_path, source, mutation.source)
            removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
            added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
            if mutation.kind == "remove_branch":
                assert added == [] and removed[0][1:].lstrip().startswith("if "), diff
            else:
                assert len(removed) == len(added) == 1, diff
    assert set(kinds) == {"flip_comparison", "off_by_one", "swap_operator", "swap_boolean", "remove_branch"}


def test_kept_tasks_fail_with_the_bug_and_pass_with_the_reference_fix(generated):
    out, tasks, stats = generated
    assert len(tasks) == 4 and stats.kept == 4 and stats.tried >= 4
    assert sum(stats.rejected.values()) == stats.tried - stats.kept
    project = make_project("stats", 5)
    every = {f"{project.test_path}::{line[4:].split('(')[0]}" for line in project.files[project.test_path].splitlines()
             if line.startswith("def test_")}
    for task in tasks:
        assert task.fail_to_pass and not set(task.fail_to_pass) & set(task.pass_to_pass)
        assert set(task.fail_to_pass) | set(task.pass_to_pass) == every
        assert task.repo == str(out / "projects" / "stats-5") and task.test_files == [project.test_path]
        with open_sandbox(task) as box:
            # The snapshot has the bug and no trace of it in git; the reference fix restores the clean module.
            assert box.exec("git log --oneline | wc -l").stdout.strip() == "1"
            before = parse_pytest(box.exec(task.test_run_command()).stdout)
            assert {t for t, s in before.items() if s != "PASSED"} == set(task.fail_to_pass)
            assert apply_patch(box, task.reference_patch, "reference") is None
            assert box.read_file(project.module_path).decode() == project.files[project.module_path]
            after = parse_pytest(box.exec(task.test_run_command()).stdout)
            assert set(after) == every and set(after.values()) == {"PASSED"}


def test_shipped_tasks_are_consistent():
    rows = {split: [json.loads(line) for line in (HERE / "data" / f"{split}.jsonl").open()] for split in ("train", "val")}
    tasks = {split: load_tasks(HERE / "data" / f"{split}.jsonl") for split in rows}
    ids = [t.id for split in tasks.values() for t in split]
    assert len(ids) == len(set(ids)) >= 60 and len(tasks["val"]) >= 20
    assert {t.repo for t in tasks["val"]}.isdisjoint({t.repo for t in tasks["train"]})  # val projects are unseen
    for split in tasks.values():
        for task in split:
            assert Path(task.repo).is_dir() and task.fail_to_pass and task.start_patch and task.reference_patch
            assert task.metadata["mutation"] in {"flip_comparison", "off_by_one", "swap_operator", "swap_boolean",
                                                 "remove_branch"}
    assert len({t.metadata["mutation"] for split in tasks.values() for t in split}) >= 4


def test_bad_flags_are_named_before_any_work(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    for argv, why in [(["--per-project", "0"], "argument --per-project: must be at least 1, got 0"),
                      (["--per-project", "-2"], "argument --per-project: must be at least 1, got -2"),
                      (["--backend", "docker"], "argument --backend: invalid choice: 'docker'"),
                      (["--kinds", "bogus"], "argument --kinds: invalid choice: 'bogus'"),
                      (["--out", str(tmp_path / "file")], f"--out {tmp_path / 'file'}: exists and is not a directory")]:
        with pytest.raises(SystemExit) as exited:
            main(["--out", str(tmp_path / "out"), *argv])
        assert exited.value.code == 2 and why in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
