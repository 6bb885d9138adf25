"""The span that is running now, per thread and per asyncio task (a `ContextVar`), and the batch of its trace."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TraceBatch:
    """Finished spans of one trace, exported together when its root ends."""

    finished: list[dict[str, Any]] = field(default_factory=list)
    exported: bool = False


@dataclass(frozen=True)
class ActiveSpan:
    trace_id: str
    """32 lowercase hex digits."""
    span_id: str
    """16 lowercase hex digits."""
    batch: TraceBatch


current_span: ContextVar[ActiveSpan | None] = ContextVar("arclight_current_span", default=None)


def active_span() -> ActiveSpan | None:
    """The innermost span of the built-in tracer running here, or None."""
    return current_span.get()


def traceparent() -> dict[str, str]:
    """W3C `traceparent` header of the active span (empty outside one): pass it as `extra_headers` to a model call so
    the gateway files the call under this span.

    :see: W3C Trace Context, "traceparent header"
    """
    active = current_span.get()
    return {} if active is None else {"traceparent": f"00-{active.trace_id}-{active.span_id}-01"}
