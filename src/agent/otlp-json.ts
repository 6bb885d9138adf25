/**
 * @module Finished spans as an OTLP/JSON `ExportTraceServiceRequest`, with no OpenTelemetry dependency.
 * @see OTLP specification, "JSON Protobuf Encoding" (hex ids, integer enums, int64 as strings)
 */

/** Attribute values the tracer accepts: what OTLP `AnyValue` can hold. */
export type AttributeValue =
  | string
  | number
  | boolean
  | null
  | readonly AttributeValue[]
  | { [key: string]: AttributeValue };
/** Span attributes. */
export type Attributes = Record<string, AttributeValue>;

/** A finished span of the built-in tracer. */
export interface FinishedSpan {
  name: string;
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** The enclosing span, or undefined for a root span. */
  parentSpanId: string | undefined;
  /** OTLP `SpanKind`: 1 internal, 3 client. */
  kind: number;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Attributes;
  /** Set when the traced function threw: OTLP status error, with an `exception` event. */
  error?: { type: string; message: string; stack: string };
}

/** `AnyValue` in OTLP/JSON. */
function anyValue(value: AttributeValue): Record<string, unknown> {
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  if (value === null) return {};
  if (Array.isArray(value)) return { arrayValue: { values: value.map(anyValue) } };
  return { kvlistValue: { values: keyValues(value as Attributes) } };
}

function keyValues(attributes: Attributes): { key: string; value: Record<string, unknown> }[] {
  return Object.entries(attributes).map(([key, value]) => ({ key, value: anyValue(value) }));
}

function spanJson(span: FinishedSpan): Record<string, unknown> {
  const out: Record<string, unknown> = {
    traceId: span.traceId,
    spanId: span.spanId,
    name: span.name,
    kind: span.kind,
    startTimeUnixNano: span.startTimeUnixNano.toString(),
    endTimeUnixNano: span.endTimeUnixNano.toString(),
    attributes: keyValues(span.attributes),
    status: span.error ? { code: 2, message: span.error.message } : { code: 0 },
  };
  if (span.parentSpanId) out.parentSpanId = span.parentSpanId;
  if (span.error) {
    out.events = [
      {
        name: "exception",
        timeUnixNano: span.endTimeUnixNano.toString(),
        attributes: keyValues({
          "exception.type": span.error.type,
          "exception.message": span.error.message,
          "exception.stacktrace": span.error.stack,
        }),
      },
    ];
  }
  return out;
}

/** The OTLP/JSON body of one export. */
export function otlpJsonRequest(
  resource: Attributes,
  scope: { name: string; version: string },
  spans: readonly FinishedSpan[],
): Record<string, unknown> {
  return {
    resourceSpans: [
      {
        resource: { attributes: keyValues(resource) },
        scopeSpans: [{ scope, spans: spans.map(spanJson) }],
      },
    ],
  };
}
