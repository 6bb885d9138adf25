"""The calc-x agent: a word problem, a model that may call a calculator through MCP, a graded numeric reward.

Run by the controller as `agent_class: recipes.calc_x.agent:CalcAgent` (from the repository root). Each rollout starts
the MCP calculator server (`calculator_server.py`) over stdio, offers its tools to the model in OpenAI's `tools`
shape, runs the tool calls the model makes through MCP, and stops at the first reply without tool calls or after
`CALC_MAX_TURNS` model calls. The answer is the number on the reply's `ANSWER:` line (reward: `reward.py`).

Environment (all optional): `CALC_MAX_TURNS` (default 4), `CALC_MAX_TOKENS` per model call (default: not sent),
`CALC_TEMPERATURE` (default: the gateway's per-mode temperature).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from arclight_agent import emit_event, span, tool_call, traceparent
from mcp import Client, StdioServerParameters
from openai import AsyncOpenAI, BadRequestError

from .calcx_data import problem_from_row
from .reward import extract_answer, graded_reward

SERVER = Path(__file__).resolve().parent / "calculator_server.py"
SYSTEM_PROMPT = (
    "Solve the math word problem. Use the calculate tool for arithmetic. "
    "End with a line 'ANSWER: <number>'."
)


def openai_tools(mcp_tools: list[Any]) -> list[dict[str, Any]]:
    """MCP tool descriptions as OpenAI chat `tools` entries."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema}}
        for t in mcp_tools
    ]


def tool_text(result: Any) -> str:
    """The text of an MCP `call_tool` result (its text parts joined); an MCP error is prefixed `error:`."""
    text = "\n".join(part.text for part in result.content if getattr(part, "type", "") == "text")
    return f"error: {text}" if result.is_error and not text.startswith("error:") else text


class CalcAgent:
    """An Agent Lightning `LitAgent`-shaped agent: `rollout(task, resources, rollout)` returns the reward."""

    def __init__(self) -> None:
        self.max_turns = int(os.environ.get("CALC_MAX_TURNS", "4"))
        max_tokens = os.environ.get("CALC_MAX_TOKENS")
        # Not sent by default: the server allows the rest of its context.
        self.limits = {} if max_tokens is None else {"max_tokens": int(max_tokens)}
        temperature = os.environ.get("CALC_TEMPERATURE")
        self.sampling = {} if temperature is None else {"temperature": float(temperature)}

    async def rollout(self, task: dict[str, Any], resources: dict[str, Any], rollout: dict[str, Any]) -> float:
        problem = problem_from_row(task)
        if problem is None:
            raise ValueError(f"rollout {rollout['rollout_id']}: the task's result is not a number: {task.get('result')!r}")
        llm = resources["main_llm"]
        client = AsyncOpenAI(base_url=llm.endpoint, api_key=llm.api_key or "none", max_retries=50)
        server = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
        with span("calc-x", {"gen_ai.agent.name": "calc", "calc_x.problem_id": problem.id}):
            async with Client(server) as mcp:
                tools = openai_tools((await mcp.list_tools()).tools)
                reply, turns, calls = await self.solve(client, llm.model, mcp, tools, problem.question)
        predicted = extract_answer(reply)
        reward = graded_reward(predicted, problem.answer)
        emit_event("calc_x", {"problem_id": problem.id, "gold": problem.answer, "predicted": predicted,
                              "turns": turns, "tool_calls": calls, "reply": reply[-500:]})
        return reward

    async def solve(self, client: AsyncOpenAI, model: str, mcp: Client, tools: list, question: str):
        """The tool loop. A 400 from the model server (the conversation no longer fits its context) ends it.

        :returns: the last reply's text, the model calls made, the tool calls run
        """
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]
        reply, turns, calls = "", 0, 0
        while turns < self.max_turns:
            turns += 1
            try:
                completion = await client.chat.completions.create(
                    model=model, messages=messages, tools=tools, **self.limits,
                    extra_headers=traceparent(), **self.sampling)
            except BadRequestError:
                break
            message = completion.choices[0].message
            reply = message.content or ""
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                calls += 1
                messages.append({"role": "tool", "tool_call_id": call.id, "content": await self.run_tool(mcp, call)})
        return reply, turns, calls

    async def run_tool(self, mcp: Client, call: Any) -> str:
        """Runs one tool call through MCP, traced as a tool-call span; bad arguments come back as an error text."""
        name = call.function.name
        with tool_call(name, {"gen_ai.tool.call.id": call.id, "gen_ai.tool.call.arguments": call.function.arguments}) as s:
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError as err:
                text = f"error: arguments are not JSON ({err.msg})"
            else:
                text = tool_text(await mcp.call_tool(name, arguments if isinstance(arguments, dict) else {}))
            s.set_attribute("gen_ai.tool.call.result", text)
        return text
