"""The built-in tracer, for agents without OpenTelemetry: `span(name)` and `tool_call(name)` time a block (`with`) or a
function (decorator, sync or async), nest through `contextvars` (threads and asyncio tasks), and export each finished
trace to the gateway as OTLP/JSON (`POST /v1/traces`), the same shape an OTel exporter sends. Spans under one root are
exported together when the root ends. The export is a blocking HTTP post."""

from __future__ import annotations

import functools
import inspect
import json
import secrets
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .env import AgentEnv, from_env, traces_url_of
from .http import EmitFailed, request_json
from .otlp_json import otlp_json_request, span_json
from .span_context import ActiveSpan, TraceBatch, current_span

SCOPE = {"name": "arclight.agent", "version": "1"}
F = TypeVar("F", bound=Callable[..., Any])


class SpanHandle:
    """The running span, handed to the `with` block."""

    def __init__(self, trace_id: str, span_id: str, attributes: dict[str, Any]):
        self.trace_id = trace_id
        self.span_id = span_id
        self.attributes = attributes

    def set_attribute(self, key: str, value: Any) -> None:
        """Adds or replaces an attribute (e.g. a tool's result)."""
        self.attributes[key] = value


class span:
    """A span of the built-in tracer: `with span("plan") as s:` or `@span("plan")` on a function.

    When the outermost span ends, its whole trace is exported; when the block raises, the span records the error (status
    error, `exception` event) and the error propagates after the export.
    :param name: span name, e.g. `plan` or `retrieve documents`
    :param attributes: initial attributes, e.g. `{"gen_ai.agent.name": "planner"}` (model calls inside then count as
        that agent's)
    :param env: rollout context; default `from_env()` when the span starts
    :param retries: export retries after the first try
    :raises NotInRollout: outside a rollout (before the block runs)
    :raises EmitFailed: the gateway refused the spans or kept failing (the block's own error, if any, is the `__cause__`)
    """

    def __init__(
        self, name: str, attributes: Mapping[str, Any] | None = None, *, env: AgentEnv | None = None, retries: int = 8
    ):
        self.name = name
        self.attributes = dict(attributes or {})
        self.env = env
        self.retries = retries
        self._state: tuple[Any, ...] | None = None

    def __enter__(self) -> SpanHandle:
        if self._state is not None:
            raise RuntimeError(f"span {self.name!r} is already running; make a new span() per block")
        env = self.env or from_env()
        parent = current_span.get()
        batch = parent.batch if parent else TraceBatch()
        active = ActiveSpan(parent.trace_id if parent else secrets.token_hex(16), secrets.token_hex(8), batch)
        token = current_span.set(active)
        handle = SpanHandle(active.trace_id, active.span_id, dict(self.attributes))
        self._state = (env, parent, active, token, handle, time.time_ns())
        return handle

    def __exit__(self, exc_type, exc, tb) -> bool:
        assert self._state is not None
        env, parent, active, token, handle, start_ns = self._state
        self._state = None
        current_span.reset(token)
        error = None
        if exc is not None:
            error = (exc_type.__name__, str(exc), "".join(traceback.format_exception(exc_type, exc, tb)))
        finished = span_json(
            name=self.name,
            trace_id=active.trace_id,
            span_id=active.span_id,
            parent_span_id=parent.span_id if parent else None,
            start_ns=start_ns,
            end_ns=time.time_ns(),
            attributes=handle.attributes,
            error=error,
        )
        try:
            _finish(env, active.batch, finished, parent is None, self.retries)
        except EmitFailed as failed:
            if exc is not None:
                raise failed from exc
            raise
        return False

    def __call__(self, fn: F) -> F:
        """Decorator: each call of `fn` runs in a new span with this name and these attributes."""
        make = functools.partial(span, self.name, self.attributes, env=self.env, retries=self.retries)
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args, **kwargs):
                with make():
                    return await fn(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args, **kwargs):
            with make():
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]


def tool_call(
    name: str | Callable[..., Any] | None = None, attributes: Mapping[str, Any] | None = None, **options: Any
) -> Any:
    """A tool-call span (GenAI conventions: name `execute_tool {name}`, `gen_ai.operation.name` `execute_tool`,
    `gen_ai.tool.name`), as `with tool_call("add"):`, `@tool_call("add")`, or `@tool_call` / `@tool_call(env=...)`
    (named after the function).

    :see: OpenTelemetry GenAI semantic conventions, "Execute tool span"
    """
    if name is None:
        return lambda fn: tool_call(fn.__name__, attributes, **options)(fn)
    if callable(name):
        return tool_call(name.__name__, attributes, **options)(name)
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, **(attributes or {})}
    return span(f"execute_tool {name}", attrs, **options)


def _finish(env: AgentEnv, batch: TraceBatch, finished: dict[str, Any], is_root: bool, retries: int) -> None:
    """Files a finished span: a root exports its batch; a span ending after its root was exported goes alone."""
    if batch.exported:
        return export_spans(env, [finished], retries)
    batch.finished.append(finished)
    if not is_root:
        return None
    batch.exported = True
    # Parents end after their children: the root comes last; export it first so the trace reads top-down.
    return export_spans(env, [finished, *batch.finished[:-1]], retries)


def export_spans(env: AgentEnv, spans: list[dict[str, Any]], retries: int = 8) -> None:
    """Posts OTLP/JSON spans to the attempt's traces URL, retrying transport errors, 5xx and 429.

    :raises EmitFailed: a 4xx answer, a partial-success rejection, or retries exhausted
    """
    resource = {
        "service.name": env.service_name or "arclight-agent",
        "arclight.rollout_id": env.rollout_id,
        "arclight.attempt_id": env.attempt_id,
    }
    body = otlp_json_request(resource, SCOPE, spans)
    status, text = request_json(env, "POST", traces_url_of(env), body, "spans", retries)
    try:
        partial = json.loads(text).get("partialSuccess") or {}
    except (ValueError, AttributeError):
        return
    rejected = int(partial.get("rejectedSpans") or 0)
    if rejected > 0:
        raise EmitFailed(f"gateway rejected {rejected} span(s): {partial.get('errorMessage')}", status)
