"""Fixtures of the recipes' tests: this checkout on `sys.path`, and the real stack (gateway and controller child
processes from this checkout's CLI) for the smoke tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "sdk" / "python"))

from arclight_agent.testing import Controller, Gateway  # noqa: E402


@pytest.fixture(autouse=True)
def no_outer_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drops GIT_DIR and the other GIT_* variables a caller may have set (`git rebase --exec` does): the tests' own
    git commands on temporary repositories must never reach the checkout they run from."""
    for name in [name for name in os.environ if name.startswith("GIT_")]:
        monkeypatch.delenv(name)


def repo_cli() -> str:
    """This checkout's CLI: `dist/` when built (`npm run build`, as `npm ci` does), else the TypeScript under tsx."""
    built = REPO / "dist" / "cli" / "main.js"
    return f"node {built}" if built.exists() else f"node --import tsx {REPO / 'src' / 'cli' / 'main.ts'}"


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    os.environ.setdefault("ARCLIGHT_CLI", repo_cli())
    started = Gateway.start(cwd=str(REPO))
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def start_controller(gateway: Gateway, tmp_path: Path):
    """Starts a controller running `agent_class` (a Python class of this checkout) with this Python; stops it after."""
    started: list[Controller] = []

    def start(agent_class: str, pool_size: int = 4, extra_env: dict[str, str] | None = None) -> Controller:
        env = {**os.environ, "PYTHONPATH": str(REPO / "sdk" / "python"), "PYTHONDONTWRITEBYTECODE": "1", **(extra_env or {})}
        controller = Controller.start(gateway, str(tmp_path), cwd=str(REPO), env=env, python=sys.executable,
                                      pool_size=str(pool_size), local={"agent_class": agent_class})
        started.append(controller)
        return controller

    yield start
    for controller in started:
        controller.stop()
