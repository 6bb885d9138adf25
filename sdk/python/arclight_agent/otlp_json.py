"""Finished spans as an OTLP/JSON `ExportTraceServiceRequest`: the shape the gateway's `POST /v1/traces` (and any
OTLP/HTTP receiver) reads.

:see: OTLP specification, "JSON Protobuf Encoding" (hex ids, integer enums, int64 as strings)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

KIND_INTERNAL = 1
STATUS_OK = 0
STATUS_ERROR = 2


def any_value(value: Any) -> dict[str, Any]:
    """`AnyValue` of one attribute value; objects of other types are written as their `str()`."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": key_values(value)}}
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def key_values(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": str(key), "value": any_value(value)} for key, value in attributes.items()]


def span_json(
    *,
    name: str,
    trace_id: str,
    span_id: str,
    parent_span_id: str | None,
    start_ns: int,
    end_ns: int,
    attributes: Mapping[str, Any],
    error: tuple[str, str, str] | None = None,
    kind: int = KIND_INTERNAL,
) -> dict[str, Any]:
    """One OTLP/JSON span. `error` is (type, message, stack trace): status error plus an `exception` event."""
    out: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(end_ns),
        "attributes": key_values(attributes),
        "status": {"code": STATUS_ERROR, "message": error[1]} if error else {"code": STATUS_OK},
    }
    if parent_span_id:
        out["parentSpanId"] = parent_span_id
    if error:
        event_attributes = {"exception.type": error[0], "exception.message": error[1], "exception.stacktrace": error[2]}
        out["events"] = [{"name": "exception", "timeUnixNano": str(end_ns), "attributes": key_values(event_attributes)}]
    return out


def otlp_json_request(
    resource: Mapping[str, Any], scope: Mapping[str, str], spans: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The body of one export: one resource, one scope, `spans` in order."""
    return {
        "resourceSpans": [
            {"resource": {"attributes": key_values(resource)}, "scopeSpans": [{"scope": dict(scope), "spans": list(spans)}]}
        ]
    }
