"""A small generated task set shared by the generator and reward tests (one project, made in a sandbox)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arclight_agent.sandbox import load_tasks
from recipes.swe.generate_tasks import generate


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> tuple[Path, list, object]:
    """(output dir, tasks, statistics) of generating the `stats` project of seed 5, 4 tasks."""
    out = tmp_path_factory.mktemp("swe-generated")
    stats = generate(out, seeds=[5], per_project=4, val_seed=None, kinds=["stats"])
    return out, load_tasks(out / "train.jsonl"), stats
