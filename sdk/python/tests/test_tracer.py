"""The built-in tracer against a real gateway: spans arrive as `span` events with their nesting, attributes and errors."""

from __future__ import annotations

import asyncio

import pytest

from arclight_agent import active_span, emit_reward, from_env, setup_opentelemetry, span, tool_call, traceparent


def spans_of(gateway, rid):
    return {e["data"]["name"]: e["data"] for e in gateway.events(rid, "span")}


def test_nested_spans_and_a_tool_call_reach_the_gateway_as_one_trace(gateway):
    rid = gateway.running_rollout()
    env = from_env(gateway.agent_environ(rid, OTEL_SERVICE_NAME="calc-agent"))
    with span("solve", {"gen_ai.agent.name": "solver"}, env=env) as root:
        with tool_call("add", {"gen_ai.tool.call.arguments": '{"a": 2, "b": 3}'}, env=env) as call:
            call.set_attribute("gen_ai.tool.call.result", "5")
        emit_reward(1.0, env=env)
    spans = spans_of(gateway, rid)
    assert set(spans) == {"solve", "execute_tool add"}
    tool = spans["execute_tool add"]
    assert tool["trace_id"] == root.trace_id == spans["solve"]["trace_id"]
    assert tool["parent_span_id"] == root.span_id and spans["solve"]["parent_span_id"] is None
    assert tool["attributes"]["gen_ai.tool.name"] == "add"
    assert tool["attributes"]["gen_ai.tool.call.result"] == "5"
    assert spans["solve"]["attributes"]["gen_ai.agent.name"] == "solver"
    assert spans["solve"]["resource"]["service.name"] == "calc-agent"
    assert spans["solve"]["resource"]["arclight.rollout_id"] == rid
    [reward] = gateway.events(rid, "reward")
    assert reward["data"]["trace_id"] == root.trace_id and reward["data"]["span_id"] == root.span_id


def test_decorators_trace_sync_and_async_functions(gateway):
    rid = gateway.running_rollout()
    env = from_env(gateway.agent_environ(rid))

    @tool_call(env=env)
    def multiply(a, b):
        return a * b

    @span("plan", env=env)
    async def plan():
        await asyncio.sleep(0)
        return multiply(6, 7), traceparent()

    product, header = asyncio.run(plan())
    assert product == 42 and header["traceparent"].startswith("00-")
    spans = spans_of(gateway, rid)
    assert spans["execute_tool multiply"]["parent_span_id"] == spans["plan"]["span_id"]
    assert header["traceparent"] == f"00-{spans['plan']['trace_id']}-{spans['plan']['span_id']}-01"
    assert active_span() is None


def test_an_error_in_a_span_is_recorded_and_raised(gateway):
    rid = gateway.running_rollout()
    env = from_env(gateway.agent_environ(rid))
    with pytest.raises(ZeroDivisionError):
        with tool_call("divide", env=env):
            1 / 0  # noqa: B018
    data = spans_of(gateway, rid)["execute_tool divide"]
    assert data["status"]["code"] == "error"
    [event] = data["events"]
    assert event["name"] == "exception" and event["attributes"]["exception.type"] == "ZeroDivisionError"


def test_concurrent_tasks_keep_their_own_traces(gateway):
    rid = gateway.running_rollout()
    env = from_env(gateway.agent_environ(rid))

    async def branch(name):
        with span(name, env=env):
            await asyncio.sleep(0.01)
            with tool_call(f"{name}-tool", env=env):
                await asyncio.sleep(0.01)

    async def both():
        await asyncio.gather(branch("a"), branch("b"))

    asyncio.run(both())
    spans = spans_of(gateway, rid)
    assert spans["execute_tool a-tool"]["parent_span_id"] == spans["a"]["span_id"]
    assert spans["execute_tool b-tool"]["parent_span_id"] == spans["b"]["span_id"]
    assert spans["a"]["trace_id"] != spans["b"]["trace_id"]


def test_setup_opentelemetry_exports_to_the_rollout_or_names_the_packages_it_needs(gateway):
    rid = gateway.running_rollout()
    env = from_env(gateway.agent_environ(rid))
    try:
        from opentelemetry import trace  # noqa: F401
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"):
            setup_opentelemetry(env=env)
        return
    provider = setup_opentelemetry(env=env, set_global=False)
    with provider.get_tracer("test").start_as_current_span("otel-span"):
        pass
    provider.shutdown()
    assert "otel-span" in spans_of(gateway, rid)
