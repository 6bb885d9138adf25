"""A real arclight gateway started as a child process for the SDK's tests (see `arclight_agent.testing`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from arclight_agent.testing import Gateway

REPO = Path(__file__).resolve().parents[3]


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


@pytest.fixture(scope="session")
def gateway() -> Iterator[Gateway]:
    os.environ.setdefault("ARCLIGHT_CLI", repo_cli())
    started = Gateway.start(cwd=str(REPO))
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def python_env() -> dict[str, str]:
    """Environment for a child Python that imports this SDK from the source tree."""
    sdk = str(Path(__file__).resolve().parents[1])
    return {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": sdk, "PYTHONDONTWRITEBYTECODE": "1"}
