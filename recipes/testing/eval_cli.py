"""`arclight eval` as the recipes' tests run it: this checkout's CLI as a child process from the repository root, the
SDK and the recipes importable by the agents it starts; and the pass@k the tests expect."""

from __future__ import annotations

import os
import shlex
import subprocess
from math import comb

from recipes.conftest import REPO, repo_cli


def run_eval(args: list[str]) -> subprocess.CompletedProcess:
    """Runs `arclight eval ARGS` and returns the finished process (stdout and stderr as text)."""
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'sdk' / 'python'}{os.pathsep}{REPO}", "PYTHONDONTWRITEBYTECODE": "1"}
    command = [*shlex.split(os.environ.get("ARCLIGHT_CLI", repo_cli())), "eval", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one task with c of n samples passing (Chen et al. 2021, arXiv:2107.03374)."""
    return 1.0 if n - c < k else 1 - comb(n - c, k) / comb(n, k)
