"""`python -m arclight_agent run module:Class` against a real gateway: method by mode, reward from the return value,
a traceback and a non-zero exit on failure."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PYTHON = sys.executable

AGENTS = textwrap.dedent(
    '''
    import asyncio
    from arclight_agent import emit_event

    class Both:
        def training_rollout(self, task, resources, rollout):
            emit_event("seen", {"method": "training_rollout", "task": task, "mode": rollout["mode"],
                                "endpoint": resources["main_llm"].endpoint, "model": resources["main_llm"].model})
            return 0.5
        def validation_rollout(self, task, resources, rollout):
            emit_event("seen", {"method": "validation_rollout", "mode": rollout["mode"]})
            return 0.25

    class OnlyRollout:
        async def rollout(self, task, resources, rollout):
            await asyncio.sleep(0)
            emit_event("seen", {"method": "rollout", "id": rollout["rollout_id"]})
            return task["x"] * 2.0

    class Silent:
        def rollout(self, task, resources, rollout):
            return None

    class Broken:
        def rollout(self, task, resources, rollout):
            raise ValueError("tool server unreachable")

    class NoMethod:
        pass

    class LitAgent:
        """Stands in for agentlightning's base class: its defaults delegate or raise."""
        def training_rollout(self, task, resources, rollout):
            return self.rollout(task, resources, rollout)
        def rollout(self, task, resources, rollout):
            raise NotImplementedError

    class AsyncLit(LitAgent):
        async def training_rollout_async(self, task, resources, rollout):
            await asyncio.sleep(0)
            return 0.75

    class BadReturn:
        def rollout(self, task, resources, rollout):
            return "1.0"
    '''
)


def run(gateway, tmp_path, python_env, spec, rid):
    pkg = tmp_path / "my_agents"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "agents.py").write_text(AGENTS)
    env = {**python_env, **gateway.agent_environ(rid)}
    return subprocess.run(
        [PYTHON, "-m", "arclight_agent", "run", spec], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )


def test_training_rollout_is_called_in_train_mode_and_its_return_is_the_reward(gateway, tmp_path, python_env):
    rid = gateway.running_rollout({"question": "2+3"})
    done = run(gateway, tmp_path, python_env, "my_agents.agents:Both", rid)
    assert done.returncode == 0, done.stderr
    [seen] = gateway.events(rid, "seen")
    assert seen["data"] == {
        "method": "training_rollout",
        "task": {"question": "2+3"},
        "mode": "train",
        "endpoint": f"{gateway.url}/proxy/rollout/{rid}/attempt/0/mode/train/openai/v1",
        "model": "policy",
    }
    [reward] = gateway.events(rid, "reward")
    assert reward["data"] == {"value": 0.5, "source": "my_agents.agents:Both"}


def test_validation_rollout_is_called_for_a_validation_rollout(gateway, tmp_path, python_env):
    rid = gateway.running_rollout(is_train=False)
    done = run(gateway, tmp_path, python_env, "my_agents.agents:Both", rid)
    assert done.returncode == 0, done.stderr
    assert [e["data"]["method"] for e in gateway.events(rid, "seen")] == ["validation_rollout"]
    assert [e["data"]["value"] for e in gateway.events(rid, "reward")] == [0.25]


def test_an_async_rollout_method_is_the_fallback(gateway, tmp_path, python_env):
    rid = gateway.running_rollout({"x": 3})
    done = run(gateway, tmp_path, python_env, "my_agents.agents:OnlyRollout", rid)
    assert done.returncode == 0, done.stderr
    assert [e["data"]["value"] for e in gateway.events(rid, "reward")] == [6.0]


def test_an_async_method_of_a_litagent_subclass_wins_over_the_base_class_defaults(gateway, tmp_path, python_env):
    rid = gateway.running_rollout()
    done = run(gateway, tmp_path, python_env, "my_agents.agents:AsyncLit", rid)
    assert done.returncode == 0, done.stderr
    assert [e["data"]["value"] for e in gateway.events(rid, "reward")] == [0.75]


def test_a_none_return_posts_no_reward(gateway, tmp_path, python_env):
    rid = gateway.running_rollout()
    done = run(gateway, tmp_path, python_env, "my_agents.agents:Silent", rid)
    assert done.returncode == 0, done.stderr
    assert gateway.events(rid, "reward") == []


def test_an_exception_exits_non_zero_with_its_traceback(gateway, tmp_path, python_env):
    rid = gateway.running_rollout()
    done = run(gateway, tmp_path, python_env, "my_agents.agents:Broken", rid)
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "ValueError: tool server unreachable" in done.stderr
    assert gateway.events(rid, "reward") == []


def test_a_bad_spec_or_a_class_without_a_rollout_method_exits_2(gateway, tmp_path, python_env):
    rid = gateway.running_rollout()
    for spec, message in [
        ("my_agents.agents", "expected package.module:ClassName"),
        ("my_agents.agents:Missing", "has no attribute Missing"),
        ("my_agents.agents:NoMethod", "NoMethod defines neither training_rollout() nor rollout()"),
        ("my_agents.agents:LitAgent", "LitAgent defines neither training_rollout() nor rollout()"),
    ]:
        done = run(gateway, tmp_path, python_env, spec, rid)
        assert done.returncode == 2, (spec, done.stderr)
        assert message in done.stderr


def test_a_return_that_is_not_a_number_fails_the_run(gateway, tmp_path, python_env):
    rid = gateway.running_rollout()
    done = run(gateway, tmp_path, python_env, "my_agents.agents:BadReturn", rid)
    assert done.returncode == 1 and "finite number or None" in done.stderr


def test_outside_a_rollout_the_runner_says_so_in_one_line_and_exits_2():
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGL_")}
    done = subprocess.run(
        [PYTHON, "-m", "arclight_agent", "run", "nosuch.module:Agent"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.startswith("arclight agent runner: not running inside an arclight rollout")
    assert "Traceback" not in done.stderr
