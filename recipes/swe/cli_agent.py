"""Runs an existing command-line coding agent as a rollout: its command runs in the task's sandbox with the standard
model variables pointing at this attempt's proxy, then the reward runs the task's tests (`reward.py`).

Run by the controller as `agent_class: recipes.swe.cli_agent:CliAgent` with `SWE_AGENT_COMMAND` set, e.g.
`aider --yes-always --no-git --message {problem}`; `{problem}` becomes the shell-quoted problem statement (also in
`$SWE_PROBLEM`). The command sees `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_API_BASE`, `ANTHROPIC_BASE_URL`,
`ANTHROPIC_API_KEY` and `SWE_MODEL` (the model name to ask for), from the variables the controller gives this
process. The sandbox has the network on (the agent must reach the gateway): with the local backend that is the host's
network. `SWE_AGENT_TIMEOUT` bounds the command (seconds, default 1800). See docs/sandboxes.md for which agents take
these variables.
"""

from __future__ import annotations

import os
import shlex
import time
from typing import Any

from arclight_agent import emit_event, span

from .agent import report, truncate
from .reward import grade
from .sandbox_config import open_task_sandbox, task_of

FORWARDED = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")


def agent_environment(model: str) -> dict[str, str]:
    """The model variables of this attempt, for the command (`OPENAI_API_BASE`: the older name some tools read)."""
    env = {k: os.environ[k] for k in FORWARDED if os.environ.get(k)}
    if "OPENAI_BASE_URL" in env:
        env["OPENAI_API_BASE"] = env["OPENAI_BASE_URL"]
    env["SWE_MODEL"] = model
    return env


class CliAgent:
    """Runs `SWE_AGENT_COMMAND` in the sandbox; the reward is the task's tests."""

    def __init__(self) -> None:
        self.command = os.environ.get("SWE_AGENT_COMMAND", "")
        if "{problem}" not in self.command and "SWE_PROBLEM" not in self.command:
            raise ValueError("SWE_AGENT_COMMAND must name the problem ({problem} or $SWE_PROBLEM), e.g. "
                             "'aider --yes-always --no-git --message {problem}'")
        self.timeout_s = float(os.environ.get("SWE_AGENT_TIMEOUT", "1800"))

    def rollout(self, task_row: dict[str, Any], resources: dict[str, Any], rollout: dict[str, Any]) -> float:
        task = task_of(task_row)
        env = {**agent_environment(resources["main_llm"].model), "SWE_PROBLEM": task.problem_statement}
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
        command = exports + self.command.replace("{problem}", shlex.quote(task.problem_statement))
        started = time.monotonic()
        with span("swe-cli-agent", {"gen_ai.agent.name": "swe-cli", "swe.task_id": task.id}), \
                open_task_sandbox(task, network=True) as box:
            start_seconds = time.monotonic() - started
            done = box.exec(command, timeout=self.timeout_s)
            emit_event("swe_cli", {"task_id": task.id, "exit_code": done.exit_code, "timed_out": done.timed_out,
                                   "seconds": round(done.seconds, 3), "stdout": truncate(done.stdout, 4000),
                                   "stderr": truncate(done.stderr, 4000)})
            graded = grade(box, task)
        report(task, graded, {"stop": "timeout" if done.timed_out else f"exit {done.exit_code}",
                              "sandbox_start_seconds": round(start_seconds, 3),
                              "seconds": round(time.monotonic() - started, 3)})
        return graded.reward
