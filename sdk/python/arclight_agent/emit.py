"""Posting events from an agent: `emit_reward` and `emit_event`. Each post carries a fresh `event_id`, so the gateway
stores it once however often it is retried (transport errors, 5xx, 429 with `Retry-After`)."""

from __future__ import annotations

import json
import math
import uuid
from typing import Any

from .env import AgentEnv, from_env
from .http import request_json
from .span_context import active_span


def emit_event(
    event_type: str, data: dict[str, Any] | None = None, *, env: AgentEnv | None = None, retries: int = 8
) -> dict[str, Any]:
    """Posts one event of this attempt to the gateway.

    :param event_type: e.g. `reward`, `log`, or any custom type
    :param data: JSON object stored as the event's `data`
    :param retries: retries after the first try
    :returns: the stored event (with its `sequence`)
    :raises NotInRollout: outside a rollout
    :raises EmitFailed: on a 4xx answer (e.g. 409 for a superseded attempt) or when retries run out
    """
    env = env or from_env()
    body = {"event_type": event_type, "data": data or {}, "event_id": str(uuid.uuid4())}
    _, text = request_json(env, "POST", env.event_url, body, f"a {event_type} event", retries)
    return json.loads(text)


def emit_reward(
    value: float,
    *,
    source: str | None = None,
    reason: str | None = None,
    call_id: str | None = None,
    env: AgentEnv | None = None,
    retries: int = 8,
) -> dict[str, Any]:
    """Posts this attempt's reward (a `reward` event with `{value, source?, reason?, call_id?, trace_id?, span_id?}`).

    Inside a span of the built-in tracer, the reward names that span, so it can be placed in the trace.
    :param value: the reward, a finite number
    :param source: who judged, e.g. `unit-tests`
    :param reason: why, e.g. `3 of 4 tests passed`
    :param call_id: the model or tool call this reward is for (an intermediate reward)
    :raises ValueError: when `value` is not a finite number
    :raises NotInRollout: outside a rollout
    :raises EmitFailed: see `emit_event`
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"reward must be a finite number, got {value!r}")
    data: dict[str, Any] = {"value": float(value) if isinstance(value, float) else value}
    if source is not None:
        data["source"] = source
    if reason is not None:
        data["reason"] = reason
    if call_id is not None:
        data["call_id"] = call_id
    active = active_span()
    if active is not None:
        data["trace_id"], data["span_id"] = active.trace_id, active.span_id
    return emit_event("reward", data, env=env, retries=retries)
