"""The SWE agents through the real stack: gateway and controller child processes, the agent class run by the SDK's
runner in a local sandbox per rollout, and a scripted model. Its bash tool calls apply the reference fix and run the
tests, then it submits (reward 1.0); on other tasks it only lists files and submits (reward 0.0). The command-line
adapter runs a script that asks the model for a patch through `OPENAI_BASE_URL` and applies it."""

from __future__ import annotations

import json

from recipes.testing.scripted_model import Answer, ScriptedModel, tool_results

FIX_SCRIPT = """python3 - <<'PY'
import json, os, subprocess, urllib.request
body = {"model": os.environ["SWE_MODEL"], "messages": [{"role": "user", "content": os.environ["SWE_PROBLEM"]}]}
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(body).encode(),
                                 {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
patch = json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"]
subprocess.run(["git", "apply"], input=patch.encode(), check=True)
PY"""


def first_user_text(body):
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def distinct_tasks(tasks):
    """Tasks with distinct problem statements (the scripted model tells tasks apart by them)."""
    seen = {}
    for task in tasks:
        seen.setdefault(task.problem_statement, task)
    return list(seen.values())


def test_the_agent_fixes_with_bash_and_submit_and_a_do_nothing_agent_gets_0(generated, gateway, start_controller):
    _, tasks, _ = generated
    fixed, idle = distinct_tasks(tasks)[:2]
    by_problem = {fixed.problem_statement: fixed, idle.problem_statement: idle}

    def policy(body):
        task, done = by_problem[first_user_text(body)], tool_results(body)
        if task is idle:
            return Answer(tool_calls=[("bash", {"command": "ls"})]) if not done else Answer(tool_calls=[("submit", {})])
        script = [f"cat > /tmp/fix.patch <<'ARCLIGHT_EOF'\n{task.reference_patch}ARCLIGHT_EOF\ngit apply /tmp/fix.patch",
                  "python3 -m pytest -q"]
        if len(done) < len(script):
            return Answer(tool_calls=[("bash", {"command": script[len(done)]})])
        return Answer(tool_calls=[("submit", {})])

    model = ScriptedModel(policy)
    try:
        gateway.ok("POST", "/api/models", [{"model": "policy", "endpoint": model.url}])
        created = gateway.ok("POST", "/api/rollouts", [{"input": t.to_row()} for t in (fixed, idle)])
        start_controller("recipes.swe.agent:SweAgent", pool_size=2)
        done = gateway.wait_terminal([r["rollout_id"] for r in created], timeout_s=300)
    finally:
        model.close()
    logs = {r["rollout_id"]: gateway.events(r["rollout_id"], "log") for r in done}
    assert [r["status"]["state"] for r in done] == ["succeeded"] * 2, logs
    (fixed_id, idle_id) = (r["rollout_id"] for r in done)
    assert [e["data"]["value"] for e in gateway.events(fixed_id, "reward")] == [1.0]
    assert [e["data"]["value"] for e in gateway.events(idle_id, "reward")] == [0.0]
    [result] = gateway.events(fixed_id, "swe_result")
    assert result["data"]["stop"] == "submit" and result["data"]["steps"] == 3
    assert result["data"]["fail_to_pass"] == [len(fixed.fail_to_pass)] * 2
    [diff] = gateway.events(fixed_id, "swe_diff")
    assert diff["data"]["diff"].count("\n-") >= 1 and diff["data"]["task_id"] == fixed.id
    assert [e["data"]["diff"] for e in gateway.events(idle_id, "swe_diff")] == [""]
    # Every model call is recorded with its token ids, and each bash call is a tool span.
    assert len(gateway.events(fixed_id, "model_request", triplet=True)) == 3
    spans = [e["data"]["name"] for e in gateway.events(fixed_id, "span")]
    assert spans.count("execute_tool bash") == 2 and "swe-agent" in spans


def test_a_command_line_agent_gets_the_model_variables_and_is_graded(generated, gateway, start_controller):
    _, tasks, _ = generated
    task = tasks[-1]
    model = ScriptedModel(lambda body: Answer(content=task.reference_patch if first_user_text(body) ==
                                              task.problem_statement else "no patch"))
    try:
        gateway.ok("POST", "/api/models", [{"model": "policy", "endpoint": model.url}])
        [created] = gateway.ok("POST", "/api/rollouts", [{"input": task.to_row()}])
        start_controller("recipes.swe.cli_agent:CliAgent", pool_size=1, extra_env={"SWE_AGENT_COMMAND": FIX_SCRIPT})
        [done] = gateway.wait_terminal([created["rollout_id"]], timeout_s=300)
    finally:
        model.close()
    rid = created["rollout_id"]
    assert done["status"]["state"] == "succeeded", gateway.events(rid, "log")
    [cli] = gateway.events(rid, "swe_cli")
    assert cli["data"]["exit_code"] == 0, json.dumps(cli["data"])
    assert [e["data"]["value"] for e in gateway.events(rid, "reward")] == [1.0]
    assert len(gateway.events(rid, "model_request", triplet=True)) == 1  # the CLI's call went through the proxy
