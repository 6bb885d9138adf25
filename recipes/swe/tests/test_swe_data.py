"""The SWE-bench / SWE-smith loader on rows in the public layouts, and the patch reversal it uses."""

from __future__ import annotations

import json
import subprocess

import pytest

from recipes.swe.swebench_data import load_instances, reverse_patch, task_from_instance

PATCH = """diff --git a/src/calc.py b/src/calc.py
--- a/src/calc.py
+++ b/src/calc.py
@@ -1,4 +1,4 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
diff --git a/src/new.py b/src/new.py
new file mode 100644
--- /dev/null
+++ b/src/new.py
@@ -0,0 +1,2 @@
+X = 1
+Y = 2
"""

# A SWE-bench row (test lists JSON-encoded strings) and a SWE-smith row (plain lists, `patch` adds the bug, an image).
SWE_BENCH = {"repo": "astropy/astropy", "instance_id": "astropy__astropy-12907", "base_commit": "d16bfe05a744",
             "patch": PATCH, "test_patch": "diff --git a/tests/test_calc.py b/tests/test_calc.py\n",
             "problem_statement": "add() subtracts", "hints_text": "", "created_at": "2022-03-03T15:14:54Z",
             "version": "4.3", "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),
             "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_sub", "tests/test_other.py::test_x[1-2]"]),
             "environment_setup_commit": "298ccb478e6b"}
SWE_SMITH = {"instance_id": "pandas-dev__pandas.95280573.combine_file__1a2b", "repo": "swesmith/pandas-dev__pandas.95280573",
             "patch": PATCH, "FAIL_TO_PASS": ["pandas/tests/test_a.py::test_one"], "PASS_TO_PASS": [],
             "created_at": "2025-03-14", "image_name": "jyangballin/swesmith.x86_64.pandas-dev_1776_pandas.95280573",
             "problem_statement": "Something is off"}


def test_a_swe_bench_row_becomes_a_task_at_its_base_commit_graded_after_its_test_patch(tmp_path):
    task = task_from_instance(SWE_BENCH, repos=tmp_path, image="swebench/sweb.eval.x86_64.{instance_id}")
    assert task.id == "astropy__astropy-12907" and task.repo == str(tmp_path / "astropy__astropy")
    assert task.base_commit == "d16bfe05a744" and task.start_patch == "" and task.reference_patch == PATCH
    assert task.test_patch == SWE_BENCH["test_patch"] and task.image == "swebench/sweb.eval.x86_64.astropy__astropy-12907"
    assert task.fail_to_pass == ["tests/test_calc.py::test_add"]
    assert task.pass_to_pass == ["tests/test_calc.py::test_sub", "tests/test_other.py::test_x[1-2]"]
    assert task.test_files == ["tests/test_calc.py", "tests/test_other.py"]
    assert "'tests/test_other.py::test_x[1-2]'" in task.test_run_command()  # quoted for the shell
    assert task.metadata == {"source": "swe-bench", "repo": "astropy/astropy", "version": "4.3",
                             "created_at": "2022-03-03T15:14:54Z"}


def test_a_swe_smith_row_starts_from_its_bug_patch_and_is_fixed_by_its_reverse(tmp_path):
    task = task_from_instance(SWE_SMITH, repos=tmp_path)
    assert task.repo == str(tmp_path / "pandas-dev__pandas.95280573") and task.base_commit is None
    assert task.image == SWE_SMITH["image_name"] and task.start_patch == PATCH and task.test_patch == ""
    assert task.reference_patch == reverse_patch(PATCH) and task.metadata["source"] == "swe-smith"


def test_reverse_patch_undoes_the_patch_with_git(tmp_path):
    (tmp_path / "src").mkdir()
    original = "def add(a, b):\n    return a - b\n\n\n"
    (tmp_path / "src" / "calc.py").write_text(original)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "p.diff").write_text(PATCH)
    (tmp_path / "r.diff").write_text(reverse_patch(PATCH))
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True)
    assert (tmp_path / "src" / "new.py").exists()
    subprocess.run(["git", "apply", "r.diff"], cwd=tmp_path, check=True)
    assert (tmp_path / "src" / "calc.py").read_text() == original and not (tmp_path / "src" / "new.py").exists()
    assert reverse_patch(reverse_patch(PATCH)) == PATCH


def test_load_instances_reads_jsonl_and_json_lists_and_names_bad_lines(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps(SWE_BENCH) + "\n\n" + json.dumps(SWE_SMITH) + "\n")
    (tmp_path / "b.json").write_text(json.dumps([SWE_BENCH, SWE_SMITH]))
    for name in ("a.jsonl", "b.json"):
        tasks = load_instances(tmp_path / name, image="img/{instance_id}")
        assert [t.id for t in tasks] == [SWE_BENCH["instance_id"], SWE_SMITH["instance_id"]]
        assert tasks[1].image == f"img/{SWE_SMITH['instance_id']}" and tasks[0].repo is None
    assert len(load_instances(tmp_path / "a.jsonl", limit=1, repos=tmp_path)) == 1
    (tmp_path / "bad.jsonl").write_text(json.dumps(SWE_BENCH) + "\n" + json.dumps({**SWE_BENCH, "FAIL_TO_PASS": "[oops"}) + "\n")
    with pytest.raises(ValueError, match="bad.jsonl:2: astropy__astropy-12907: FAIL_TO_PASS is not a JSON list"):
        load_instances(tmp_path / "bad.jsonl", image="x")
    (tmp_path / "short.jsonl").write_text(json.dumps({"instance_id": "x", "repo": "a/b"}) + "\n")
    with pytest.raises(ValueError, match="short.jsonl:1: x: not a SWE-bench/SWE-smith instance, missing patch"):
        load_instances(tmp_path / "short.jsonl")
    with pytest.raises(ValueError, match="no repository: give checkouts .*--repos DIR.* or images"):
        task_from_instance(SWE_BENCH)  # neither checkouts nor images given
    with pytest.raises(ValueError, match=r"image template 'img:\{tag\}': bad placeholder 'tag'"):
        task_from_instance(SWE_BENCH, image="img:{tag}")
