"""The SWE agent: a mini-SWE-agent-style loop in which the model gets a `bash` tool run in the task's sandbox and a
`submit` tool; the reward runs the task's tests (`reward.py`).

Run by the controller as `agent_class: recipes.swe.agent:SweAgent` (from the repository root). Each rollout opens a
sandbox on the task's repository (backend and limits from the environment: `sandbox_config.py`), then asks the model
(OpenAI tool calling through this attempt's proxy, `arclight_agent.openai_client()`) for tool calls until it calls
`submit`, stops calling tools `SWE_MAX_NUDGES` times, or `SWE_MAX_STEPS` model calls are spent. Each command's output
is cut to `SWE_OUTPUT_CHARS` (head and tail kept). Events: `swe_diff` (the agent's diff against the snapshot) and
`swe_result` (the reward, test counts, steps, why it stopped, sandbox times).

Environment (all optional): `SWE_MAX_STEPS` (default 30), `SWE_OUTPUT_CHARS` (4000), `SWE_MAX_TOKENS` per model call
(default: not sent), `SWE_TEMPERATURE`, `SWE_MAX_NUDGES` (3), and the sandbox keys of `sandbox_config.py`.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from arclight_agent import emit_event, openai_client, span, tool_call, traceparent
from arclight_agent.sandbox import Sandbox, SweTask

from .reward import Grade, grade
from .sandbox_config import open_task_sandbox, task_of

SYSTEM_PROMPT = (
    "You are a software engineer working in a Linux shell, in the repository of a Python project. "
    "Use the bash tool to inspect files, edit them (e.g. with sed or python3) and run the tests "
    "(python3 -m pytest). Each command runs in a fresh shell in the repository root. "
    "When the problem is fixed, call submit."
)
TOOLS = [
    {"type": "function", "function": {
        "name": "bash", "description": "Run a bash command in the repository root; returns exit code and output.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string", "description": "the command"}},
                       "required": ["command"]}}},
    {"type": "function", "function": {
        "name": "submit", "description": "Submit the current state of the repository as the solution.",
        "parameters": {"type": "object", "properties": {}}}},
]
NUDGE = "Call the bash tool to work on the problem, or submit when it is solved."
DIFF_EVENT_CHARS = 200_000


def truncate(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, keeping its head and tail (where errors and summaries are)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters elided ...]\n{text[-half:]}"


class SweAgent:
    """An Agent Lightning `LitAgent`-shaped agent: `rollout(task, resources, rollout)` returns the reward."""

    def __init__(self) -> None:
        self.max_steps = int(os.environ.get("SWE_MAX_STEPS", "30"))
        self.output_chars = int(os.environ.get("SWE_OUTPUT_CHARS", "4000"))
        self.max_nudges = int(os.environ.get("SWE_MAX_NUDGES", "3"))
        max_tokens = os.environ.get("SWE_MAX_TOKENS")
        temperature = os.environ.get("SWE_TEMPERATURE")
        self.sampling: dict[str, Any] = {} if max_tokens is None else {"max_tokens": int(max_tokens)}
        if temperature is not None:
            self.sampling["temperature"] = float(temperature)

    def rollout(self, task_row: dict[str, Any], resources: dict[str, Any], rollout: dict[str, Any]) -> float:
        task = task_of(task_row)
        llm = resources["main_llm"]
        client = openai_client()
        started = time.monotonic()
        with span("swe-agent", {"gen_ai.agent.name": "swe", "swe.task_id": task.id}), open_task_sandbox(task) as box:
            start_seconds = time.monotonic() - started
            steps, stop = self.solve(client, llm.model, box, task)
            graded = grade(box, task)
        report(task, graded, {"steps": steps, "stop": stop, "sandbox_start_seconds": round(start_seconds, 3),
                              "seconds": round(time.monotonic() - started, 3)})
        return graded.reward

    def solve(self, client: Any, model: str, box: Sandbox, task: SweTask) -> tuple[int, str]:
        """The tool loop; returns the model calls made and why it stopped (`submit`, `steps`, `no_tool_calls`,
        `context`: the model server refused the conversation, e.g. past its context)."""
        from openai import BadRequestError

        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                          {"role": "user", "content": task.problem_statement}]
        nudges = 0
        for step in range(1, self.max_steps + 1):
            try:
                completion = client.chat.completions.create(model=model, messages=messages, tools=TOOLS,
                                                            extra_headers=traceparent(), **self.sampling)
            except BadRequestError:
                return step, "context"
            message = completion.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                nudges += 1
                if nudges > self.max_nudges:
                    return step, "no_tool_calls"
                messages.append({"role": "user", "content": NUDGE})
                continue
            for call in message.tool_calls:
                if call.function.name == "submit":
                    return step, "submit"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": self.run_tool(box, task, call)})
        return self.max_steps, "steps"

    def run_tool(self, box: Sandbox, task: SweTask, call: Any) -> str:
        """Runs one tool call in the sandbox (traced as a tool-call span); a bad call comes back as an error text."""
        with tool_call(call.function.name, {"gen_ai.tool.call.id": call.id,
                                            "gen_ai.tool.call.arguments": call.function.arguments}) as s:
            text = self.bash(box, task, call.function.name, call.function.arguments)
            s.set_attribute("gen_ai.tool.call.result", text[:2000])
        return text

    def bash(self, box: Sandbox, task: SweTask, name: str, arguments_json: str | None) -> str:
        """The tool result the model sees: `exit code N` (or the time-out), stdout, then stderr, cut to size."""
        if name != "bash":
            return f"error: unknown tool {name!r}; the tools are bash and submit"
        try:
            arguments = json.loads(arguments_json or "{}")
        except json.JSONDecodeError as err:
            return f"error: arguments are not JSON ({err.msg})"
        if not isinstance(arguments, dict) or not isinstance(arguments.get("command"), str):
            return 'error: bash takes {"command": "<shell command>"}'
        done = box.exec(arguments["command"], timeout=task.timeout_seconds)
        status = f"timed out after {task.timeout_seconds:g} s" if done.timed_out else f"exit code {done.exit_code}"
        stderr = f"\n[stderr]\n{done.stderr}" if done.stderr else ""
        return truncate(f"{status}\n{done.stdout}{stderr}", self.output_chars)


def report(task: SweTask, graded: Grade, extra: dict[str, Any]) -> None:
    """Posts the `swe_diff` and `swe_result` events of a graded rollout."""
    emit_event("swe_diff", {"task_id": task.id, "diff": graded.diff[:DIFF_EVENT_CHARS],
                            "truncated": len(graded.diff) > DIFF_EVENT_CHARS})
    emit_event("swe_result", {"task_id": task.id, **graded.metadata(), **extra})
