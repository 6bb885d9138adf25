"""`check_tasks` on tasks written by hand: a sound task passes (no change 0.0, reference fix 1.0); a wrong reference
fix, a fail-to-pass test that already passes and a repo that is not there are each named, and the exit code says so."""

from __future__ import annotations

import difflib
import json
import subprocess

import pytest
from recipes.swe.check_tasks import main

BUGGY = "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n\n\ndef double(x):\n    return 2 * x\n"
TESTS = ("from calc import mean, double\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
         "def test_double():\n    assert double(2) == 4\n")
FIX = "".join(difflib.unified_diff(BUGGY.splitlines(True), BUGGY.replace("(len(xs) + 1)", "len(xs)").splitlines(True),
                                   "a/calc.py", "b/calc.py"))


def test_sound_tasks_pass_and_each_broken_one_is_named(tmp_path, capsys):
    repo = tmp_path / "repos" / "calc"
    repo.mkdir(parents=True)
    (repo / "calc.py").write_text(BUGGY)
    (repo / "test_calc.py").write_text(TESTS)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    base = {"problem_statement": "mean is wrong", "repo": "repos/calc", "fail_to_pass": ["test_calc.py::test_mean"],
            "pass_to_pass": ["test_calc.py::test_double"], "test_files": ["test_calc.py"], "reference_patch": FIX}
    rows = [{**base, "id": "sound"},
            {**base, "id": "no-fix", "reference_patch": FIX.replace("/ len(xs)", "/ len(xs) / 2")},
            {**base, "id": "passes-already", "fail_to_pass": ["test_calc.py::test_double"], "pass_to_pass": []},
            {**base, "id": "no-repo", "repo": "repos/missing"}]
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(SystemExit) as exited:
        main([str(tmp_path / "tasks.jsonl")])
    assert exited.value.code == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    results = {line["id"]: line for line in lines[:-1]}
    assert results["sound"]["problems"] == []
    assert results["sound"]["no_change_reward"] == 0.0 and results["sound"]["reference_reward"] == 1.0
    assert results["no-fix"]["reference_reward"] == 0.0
    assert results["no-fix"]["problems"] == ["the reference fix scores 0.0: fail-to-pass 0/1, pass-to-pass 1/1"]
    assert results["passes-already"]["problems"][0].startswith("fail-to-pass tests already pass at the snapshot")
    assert "needs a repo directory" in results["no-repo"]["problems"][0]
    assert lines[-1] == {"tasks": 4, "ok": 1, "failed": 3}

    (tmp_path / "bad.jsonl").write_text('{"id": "x"}\n')
    with pytest.raises(SystemExit) as exited:
        main([str(tmp_path / "bad.jsonl")])
    assert exited.value.code == 2 and "bad.jsonl:1: task x needs problem_statement" in capsys.readouterr().err
