"""The test-execution reward on fixed diffs: the reference fix gets 1.0; no change, a fix that breaks a pass-to-pass
test, edits to the tests, and a patch that does not apply get 0.0."""

from __future__ import annotations

from arclight_agent.sandbox import open_sandbox
from recipes.swe.reward import apply_patch, grade, ignored_paths, parse_pytest, without_files

PYTEST_SUMMARY = """
=========================== short test summary info ============================
PASSED tests/test_core.py::test_mean
PASSED tests/test_core.py::test_x[a b]
FAILED tests/test_core.py::test_median_even - assert 40 == 40.5
ERROR tests/test_core.py::test_teardown - RuntimeError
PASSED tests/test_core.py::test_teardown
"""


def test_parse_pytest_reads_the_short_summary():
    assert parse_pytest(PYTEST_SUMMARY) == {"tests/test_core.py::test_mean": "PASSED",
                                            "tests/test_core.py::test_median_even": "FAILED",
                                            "tests/test_core.py::test_teardown": "ERROR"}


def test_the_reference_fix_gets_1_and_no_change_gets_0(generated):
    _, tasks, _ = generated
    task = tasks[0]
    with open_sandbox(task) as box:
        untouched = grade(box, task)
        assert untouched.reward == 0.0 and untouched.diff == ""
        assert (untouched.fail_to_pass_passed, untouched.pass_to_pass_passed) == (0, len(task.pass_to_pass))
        assert apply_patch(box, task.reference_patch, "agent") is None
        fixed = grade(box, task)
        assert fixed.reward == 1.0 and fixed.reason == f"fail-to-pass {len(task.fail_to_pass)}/{len(task.fail_to_pass)}" \
            f", pass-to-pass {len(task.pass_to_pass)}/{len(task.pass_to_pass)}"
        assert "diff --git" in fixed.diff and fixed.metadata()["fail_to_pass"] == [len(task.fail_to_pass)] * 2
        # grade() reset the sandbox: the same diff graded again, given explicitly, scores the same.
        assert grade(box, task, diff=fixed.diff).reward == 1.0


def test_a_fix_that_breaks_a_pass_to_pass_test_gets_0(generated):
    _, tasks, _ = generated
    task = tasks[0]
    other = next(t for t in tasks if set(t.fail_to_pass) <= set(task.pass_to_pass))
    with open_sandbox(task) as box:
        assert apply_patch(box, task.reference_patch, "agent") is None
        assert apply_patch(box, other.start_patch, "breakage") is None  # another task's bug, in a tested function
        graded = grade(box, task)
    assert graded.reward == 0.0 and graded.fail_to_pass_passed == len(task.fail_to_pass)
    assert graded.pass_to_pass_passed == len(task.pass_to_pass) - len(other.fail_to_pass)


def test_editing_the_tests_does_not_pass_and_a_broken_diff_gets_0(generated):
    _, tasks, _ = generated
    task = tasks[0]
    with open_sandbox(task) as box:
        tests = box.read_file(task.test_files[0]).decode()
        box.write_file(task.test_files[0], tests.replace("assert ", "assert True or ").encode())
        assert parse_pytest(box.exec(task.test_run_command()).stdout).get(task.fail_to_pass[0]) == "PASSED"
        cheated = grade(box, task)
        assert cheated.reward == 0.0 and task.test_files[0] in cheated.diff
        assert without_files(cheated.diff, task.test_files) == ""
        broken = grade(box, task, diff="diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-x\n+y\n")
        assert broken.reward == 0.0 and "does not apply" in broken.reason


HOOK = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")


def test_plugging_into_pytest_or_shadowing_it_does_not_pass(generated):
    """Each of these makes every test report PASSED when run as is; grading ignores them, so no change scores 0.0."""
    _, tasks, _ = generated
    task = tasks[0]
    hacks = {"conftest.py": HOOK, "tests/conftest.py": HOOK, "pytest.py": "import sys\nfor t in sys.argv[1:]:\n"
             "    print('PASSED ' + t)\n", "myplugin.py": HOOK, "pytest.ini": "[pytest]\naddopts = -p myplugin\n"}
    with open_sandbox(task) as box:
        for path, text in hacks.items():
            box.write_file(path, text.encode())
            if path != "myplugin.py":
                assert parse_pytest(box.exec(task.test_run_command()).stdout).get(task.fail_to_pass[0]) == "PASSED"
                box.exec(f"rm {path}")
        for path, text in hacks.items():
            box.write_file(path, text.encode())
        cheated = grade(box, task)
        assert cheated.reward == 0.0 and cheated.fail_to_pass_passed == 0, cheated.reason
        assert cheated.pass_to_pass_passed == len(task.pass_to_pass) and "conftest.py" in cheated.diff
        # The same files next to the reference fix: the fix counts, the rest is ignored.
        assert apply_patch(box, task.reference_patch, "agent") is None
        for path, text in hacks.items():
            box.write_file(path, text.encode())
        assert grade(box, task).reward == 1.0
    assert ignored_paths("diff --git a/json.py b/json.py\ndiff --git a/pkg/json.py b/pkg/json.py\n"
                         "diff --git a/test/x.py b/test/x.py\ndiff --git a/a/setup.cfg b/a/setup.cfg\n",
                         snapshot_top={"test", "pkg"}) == ["a/setup.cfg", "json.py"]
