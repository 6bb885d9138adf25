"""calc-x through the real stack: gateway and controller child processes, the agent class run by the SDK's runner,
the MCP calculator server, and a scripted model that solves each problem with the calculator (one tool call per
step of the problem's chain, then `ANSWER: <the last tool output>`), except one problem it answers wrong."""

from __future__ import annotations

import json
import re
import time

from recipes.calc_x.calcx_data import load_calcx
from recipes.calc_x.generate_problems import HERE
from recipes.testing.scripted_model import Answer, ScriptedModel, last_user_text, tool_results

ROWS = [json.loads(line) for line in open(HERE / "data" / "val.jsonl")][:6]
STEPS = {row["question"]: re.findall(r'<gadget id="calculator">(.*?)</gadget>', row["chain"]) for row in ROWS}
WRONG = ROWS[0]["question"]


def calculator_user(body):
    steps, done = STEPS[last_user_text(body)], tool_results(body)
    if len(done) < len(steps):
        return Answer(tool_calls=[("calculate", {"expression": steps[len(done)]})])
    answer = float(done[-1])
    if last_user_text(body) == WRONG:
        answer = answer * 2 + 1  # far from the gold answer: the format is right, the number is not
    return Answer(content=f"I used the calculator.\nANSWER: {answer:g}")


def test_calc_x_rollouts_get_graded_rewards_and_rows(gateway, start_controller):
    model = ScriptedModel(calculator_user)
    try:
        gateway.ok("POST", "/api/models", [{"model": "policy", "endpoint": model.url}])
        created = gateway.ok("POST", "/api/rollouts", [{"input": row} for row in ROWS])
        ids = [r["rollout_id"] for r in created]
        started = time.monotonic()
        start_controller("recipes.calc_x.agent:CalcAgent")
        done = gateway.wait_terminal(ids, timeout_s=300)
        elapsed = time.monotonic() - started
    finally:
        model.close()
    logs = {r["rollout_id"]: gateway.events(r["rollout_id"], "log") for r in done if r["status"]["state"] != "succeeded"}
    assert [r["status"]["state"] for r in done] == ["succeeded"] * len(ROWS), logs
    problems = {p.id: p for p in load_calcx(HERE / "data" / "val.jsonl")[0]}
    for row, rollout in zip(ROWS, done):
        rid = rollout["rollout_id"]
        [reward] = gateway.events(rid, "reward")
        assert reward["data"]["value"] == (0.1 if row["question"] == WRONG else 1.0)
        [info] = gateway.events(rid, "calc_x")
        assert info["data"]["tool_calls"] == row["level"] and info["data"]["turns"] == row["level"] + 1
        assert info["data"]["gold"] == problems[row["id"]].answer
        # One training row source per model call, each with its token ids.
        calls = gateway.events(rid, "model_request", triplet=True)
        assert len(calls) == row["level"] + 1
        spans = [e["data"] for e in gateway.events(rid, "span")]
        tools = [s for s in spans if s["name"] == "execute_tool calculate"]
        assert len(tools) == row["level"] and all(s["parent_span_id"] for s in tools)
    print(f"calc-x smoke: {len(ROWS)} rollouts in {elapsed:.1f} s ({len(ROWS) / elapsed:.2f} rollouts/s)")
