"""arclight's agent SDK for Python: the rollout's environment, rewards and events, spans and tool calls to the gateway
(OTLP/JSON), an OpenTelemetry helper, and the runner of `module:Class` agents (`python -m arclight_agent run`)."""

from .emit import emit_event, emit_reward
from .env import AgentEnv, NotInRollout, from_env, gateway_url_of, traces_url_of
from .http import EmitFailed
from .openai_client import openai_client
from .otel import setup_opentelemetry
from .runner import LLM, run_agent_class
from .span_context import active_span, traceparent
from .tracer import SpanHandle, export_spans, span, tool_call

__all__ = [
    "LLM",
    "AgentEnv",
    "EmitFailed",
    "NotInRollout",
    "SpanHandle",
    "active_span",
    "emit_event",
    "emit_reward",
    "export_spans",
    "from_env",
    "gateway_url_of",
    "openai_client",
    "run_agent_class",
    "setup_opentelemetry",
    "span",
    "tool_call",
    "traceparent",
    "traces_url_of",
]
