"""The recipe's sandbox settings from the environment: a bad variable or a task repo that is not where the data
folder says is named before any sandbox starts."""

from __future__ import annotations

import pytest
from arclight_agent.sandbox import SandboxError
from recipes.swe.sandbox_config import limits_from_env, open_task_sandbox, task_of

ROW = {"id": "mine.0", "problem_statement": "p", "fail_to_pass": ["tests/test_a.py::test_a"], "repo": "projects/mine"}


def test_a_relative_repo_outside_the_data_dir_names_swe_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SWE_DATA_DIR", str(tmp_path))
    task = task_of(ROW)
    assert task.repo == str(tmp_path / "projects" / "mine")
    why = f"repo {tmp_path}/projects/mine is not a directory.*SWE_DATA_DIR \\({tmp_path}\\)"
    with pytest.raises(SandboxError, match=why):
        open_task_sandbox(task)


def test_bad_sandbox_variables_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("SWE_SANDBOX_MEMORY_MB", "2G")
    with pytest.raises(ValueError, match="SWE_SANDBOX_MEMORY_MB='2G': not an integer"):
        limits_from_env()
    monkeypatch.setenv("SWE_SANDBOX_MEMORY_MB", "512")
    monkeypatch.setenv("SWE_SANDBOX_PIDS", "0")
    assert limits_from_env().memory_mb == 512 and limits_from_env().pids is None
    (tmp_path / "projects" / "mine").mkdir(parents=True)
    monkeypatch.setenv("SWE_DATA_DIR", str(tmp_path))
    for options, why in [("{namespace: x}", "SWE_SANDBOX_OPTIONS is not JSON"),
                         ('["x"]', "SWE_SANDBOX_OPTIONS must be a JSON object")]:
        monkeypatch.setenv("SWE_SANDBOX_OPTIONS", options)
        with pytest.raises(ValueError, match=why):
            open_task_sandbox(task_of(ROW))
