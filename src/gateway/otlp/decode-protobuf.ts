/**
 * @module Decodes an OTLP/protobuf `ExportTraceServiceRequest` (protobufjs, official schema) into `span` event data,
 * in the order the request lists them.
 */
import type protobuf from "protobufjs";
import { BadRequest, SPAN_KINDS, SPAN_STATUS_CODES, type SpanData } from "../../protocol/index.js";
import type { OtlpTraceSchema } from "./schema.js";

/** A protobufjs message read through its field names (camelCase). */
type Message = Record<string, unknown>;
/** `fixed64`/`int64` values arrive as `Long` objects (protobufjs uses the `long` package for 64-bit fields). */
type LongLike = { toString(): string; toNumber(): number; high: number; low: number };

const MAX_SAFE_HIGH = 0x1fffff;

function isLong(value: unknown): value is LongLike {
  return typeof value === "object" && value !== null && "high" in value && "low" in value;
}

/** An int64 attribute as a JSON number when it fits in 53 bits, else its decimal string. */
function int64Value(value: unknown): number | string {
  if (!isLong(value)) return Number(value);
  const fits = value.high >= -MAX_SAFE_HIGH - 1 && value.high <= MAX_SAFE_HIGH;
  return fits ? value.toNumber() : value.toString();
}

function unixNano(value: unknown): string {
  return isLong(value) ? value.toString() : String(value ?? 0);
}

function hexId(bytes: unknown, length: number, what: string): string {
  const hex =
    bytes instanceof Uint8Array ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("hex") : "";
  if (hex.length !== length * 2)
    throw new BadRequest(`OTLP span ${what} must be ${length} bytes, got ${hex.length / 2}`);
  return hex;
}

/** `AnyValue` → JSON: the set member of its `value` oneof (protobufjs names it through the virtual `value` field). */
function anyValue(value: Message | null | undefined): unknown {
  if (!value) return null;
  switch (value.value as string | undefined) {
    case "stringValue":
      return value.stringValue;
    case "boolValue":
      return value.boolValue;
    case "intValue":
      return int64Value(value.intValue);
    case "doubleValue":
      return value.doubleValue;
    case "arrayValue":
      return ((value.arrayValue as Message).values as Message[]).map(anyValue);
    case "kvlistValue":
      return attributes((value.kvlistValue as Message).values as Message[]);
    case "bytesValue":
      return Buffer.from(value.bytesValue as Uint8Array).toString("base64");
    default:
      return null;
  }
}

/** `repeated KeyValue` → a JSON object (a repeated key keeps its last value). */
function attributes(list: Message[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) out[kv.key as string] = anyValue(kv.value as Message | null);
  return out;
}

function spanData(span: Message, resource: Record<string, unknown>, scope: SpanData["scope"]): SpanData {
  const parent = span.parentSpanId as Uint8Array | undefined;
  const status = (span.status as Message | null) ?? {};
  return {
    name: span.name as string,
    trace_id: hexId(span.traceId, 16, "trace_id"),
    span_id: hexId(span.spanId, 8, "span_id"),
    parent_span_id: parent && parent.length > 0 ? hexId(parent, 8, "parent_span_id") : null,
    kind: SPAN_KINDS[span.kind as number] ?? "unspecified",
    start_time_unix_nano: unixNano(span.startTimeUnixNano),
    end_time_unix_nano: unixNano(span.endTimeUnixNano),
    status: {
      code: SPAN_STATUS_CODES[(status.code as number) ?? 0] ?? "unset",
      message: (status.message as string) ?? "",
    },
    attributes: attributes(span.attributes as Message[]),
    events: ((span.events as Message[]) ?? []).map((event) => ({
      name: event.name as string,
      time_unix_nano: unixNano(event.timeUnixNano),
      attributes: attributes(event.attributes as Message[]),
    })),
    links: ((span.links as Message[]) ?? []).map((link) => ({
      trace_id: hexId(link.traceId, 16, "link trace_id"),
      span_id: hexId(link.spanId, 8, "link span_id"),
      attributes: attributes(link.attributes as Message[]),
    })),
    resource,
    scope,
  };
}

/**
 * Decodes a protobuf body.
 * @param schema - the loaded OTLP schema
 * @param body - the (already decompressed) request body
 * @returns the spans as `span` event data, resource by resource, scope by scope, in request order
 * @throws {BadRequest} the body is not an `ExportTraceServiceRequest`, or an id has the wrong length
 */
export function decodeProtobufSpans(schema: OtlpTraceSchema, body: Uint8Array): SpanData[] {
  let request: Message;
  try {
    request = schema.request.decode(body) as unknown as Message;
  } catch (err) {
    throw new BadRequest(`Invalid OTLP protobuf body: ${(err as Error).message}`);
  }
  const spans: SpanData[] = [];
  for (const resourceSpans of (request.resourceSpans as Message[]) ?? []) {
    const resource = attributes((resourceSpans.resource as Message | null)?.attributes as Message[]);
    const scopes = [
      ...((resourceSpans.scopeSpans as Message[]) ?? []).map((s) => ({ scope: s.scope as Message | null, s })),
      ...((resourceSpans.instrumentationLibrarySpans as Message[]) ?? []).map((s) => ({
        scope: s.instrumentationLibrary as Message | null,
        s,
      })),
    ];
    for (const { scope, s } of scopes) {
      const scopeInfo = { name: (scope?.name as string) ?? "", version: (scope?.version as string) ?? "" };
      for (const span of (s.spans as Message[]) ?? []) spans.push(spanData(span, resource, scopeInfo));
    }
  }
  return spans;
}

/**
 * Encodes the reply to a protobuf request.
 * @param rejectedSpans - spans not stored; 0 leaves `partial_success` unset
 * @param errorMessage - why, when some were rejected
 */
export function encodeProtobufResponse(
  schema: OtlpTraceSchema,
  rejectedSpans: number,
  errorMessage: string,
): Uint8Array {
  const partial = rejectedSpans > 0 ? { partialSuccess: { rejectedSpans, errorMessage } } : {};
  return schema.response.encode(schema.response.create(partial) as protobuf.Message).finish();
}
