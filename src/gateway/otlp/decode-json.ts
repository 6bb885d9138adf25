/**
 * @module Decodes an OTLP/JSON `ExportTraceServiceRequest` into `span` event data. OTLP/JSON is the protobuf JSON
 * mapping with two exceptions the specification makes: trace and span ids are hex strings (not base64), and enums are
 * integers. Field names are lowerCamelCase; unknown fields are ignored, as the specification requires of receivers.
 * @see OTLP specification, "JSON Protobuf Encoding"
 */
import { z } from "zod";
import { BadRequest, parseOrThrow, SPAN_KINDS, SPAN_STATUS_CODES, type SpanData } from "../../protocol/index.js";

/** int64 / fixed64 in the JSON mapping: a decimal string, or a JSON number. */
const Int64 = z.union([z.string().regex(/^-?\d{1,20}$/), z.number().refine(Number.isInteger, "an integer")]);
/** Nanoseconds: a decimal string, or a JSON number (already rounded by the sender's JSON encoder past 2^53). */
const UnixNano = z
  .union([
    z.string().regex(/^\d{1,20}$/),
    z
      .number()
      .min(0)
      .transform((n) => BigInt(Math.trunc(n)).toString()),
  ])
  .default("0");
const KeyValue = z.looseObject({ key: z.string(), value: z.unknown().optional() });
const KeyValues = z.array(KeyValue).default([]);
const HexId = (bytes: number) =>
  z
    .string()
    .regex(new RegExp(`^[0-9a-fA-F]{${bytes * 2}}$`), `${bytes * 2} hex digits`)
    .transform((id) => id.toLowerCase());

const SpanJson = z.looseObject({
  traceId: HexId(16),
  spanId: HexId(8),
  parentSpanId: z.union([HexId(8), z.literal("")]).optional(),
  name: z.string().default(""),
  kind: z.number().int().min(0).max(5).default(0),
  startTimeUnixNano: UnixNano,
  endTimeUnixNano: UnixNano,
  attributes: KeyValues,
  events: z
    .array(z.looseObject({ timeUnixNano: UnixNano, name: z.string().default(""), attributes: KeyValues }))
    .default([]),
  links: z.array(z.looseObject({ traceId: HexId(16), spanId: HexId(8), attributes: KeyValues })).default([]),
  status: z
    .looseObject({ code: z.number().int().min(0).max(2).default(0), message: z.string().default("") })
    .optional(),
});

const ScopeSpansJson = z.looseObject({
  scope: z.looseObject({ name: z.string().default(""), version: z.string().default("") }).optional(),
  spans: z.array(SpanJson).default([]),
});

const RequestJson = z.looseObject({
  resourceSpans: z
    .array(
      z.looseObject({
        resource: z.looseObject({ attributes: KeyValues }).optional(),
        scopeSpans: z.array(ScopeSpansJson).default([]),
      }),
    )
    .default([]),
});

/** `AnyValue` in JSON → plain JSON. An object with none of the known members is invalid. */
function anyValue(value: unknown, loc: string): unknown {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value))
    throw new BadRequest(`OTLP ${loc}: AnyValue must be an object`);
  const v = value as Record<string, unknown>;
  if ("stringValue" in v) return String(v.stringValue);
  if ("boolValue" in v) return v.boolValue === true;
  if ("intValue" in v) return intValue(Int64.safeParse(v.intValue), loc);
  if ("doubleValue" in v) return Number(v.doubleValue);
  if ("arrayValue" in v) return listOf(v.arrayValue, loc).map((item) => anyValue(item, loc));
  if ("kvlistValue" in v) return attributes(KeyValues.parse(listOf(v.kvlistValue, loc)), loc);
  if ("bytesValue" in v) return String(v.bytesValue);
  if (Object.keys(v).length === 0) return null;
  throw new BadRequest(`OTLP ${loc}: unknown AnyValue member ${Object.keys(v)[0]}`);
}

function intValue(parsed: { success: boolean; data?: string | number }, loc: string): number | string {
  if (!parsed.success) throw new BadRequest(`OTLP ${loc}: intValue must be an integer`);
  const n = Number(parsed.data);
  return Number.isSafeInteger(n) ? n : String(parsed.data);
}

function listOf(holder: unknown, loc: string): unknown[] {
  const values = (holder as { values?: unknown } | null)?.values ?? [];
  if (!Array.isArray(values)) throw new BadRequest(`OTLP ${loc}: values must be a list`);
  return values;
}

function attributes(list: z.infer<typeof KeyValues>, loc: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list) out[kv.key] = anyValue(kv.value, `${loc} attribute ${kv.key}`);
  return out;
}

function spanData(
  span: z.infer<typeof SpanJson>,
  resource: Record<string, unknown>,
  scope: SpanData["scope"],
): SpanData {
  const loc = `span ${span.spanId}`;
  return {
    name: span.name,
    trace_id: span.traceId,
    span_id: span.spanId,
    parent_span_id: span.parentSpanId ? span.parentSpanId : null,
    kind: SPAN_KINDS[span.kind] ?? "unspecified",
    start_time_unix_nano: String(span.startTimeUnixNano),
    end_time_unix_nano: String(span.endTimeUnixNano),
    status: { code: SPAN_STATUS_CODES[span.status?.code ?? 0] ?? "unset", message: span.status?.message ?? "" },
    attributes: attributes(span.attributes, loc),
    events: span.events.map((event) => ({
      name: event.name,
      time_unix_nano: String(event.timeUnixNano),
      attributes: attributes(event.attributes, `${loc} event ${event.name}`),
    })),
    links: span.links.map((link) => ({
      trace_id: link.traceId,
      span_id: link.spanId,
      attributes: attributes(link.attributes, `${loc} link`),
    })),
    resource,
    scope,
  };
}

/**
 * Decodes a parsed JSON body.
 * @param body - the parsed request body
 * @returns the spans as `span` event data, in request order
 * @throws {ValidationFailed} the body is not an `ExportTraceServiceRequest` (422, `loc` names the field)
 * @throws {BadRequest} an attribute value is not an OTLP `AnyValue`
 */
export function decodeJsonSpans(body: unknown): SpanData[] {
  const request = parseOrThrow(RequestJson, body, "OTLP trace request", ["body"]);
  const spans: SpanData[] = [];
  for (const resourceSpans of request.resourceSpans) {
    const resource = attributes(resourceSpans.resource?.attributes ?? [], "resource");
    for (const scopeSpans of resourceSpans.scopeSpans) {
      const scope = { name: scopeSpans.scope?.name ?? "", version: scopeSpans.scope?.version ?? "" };
      for (const span of scopeSpans.spans) spans.push(spanData(span, resource, scope));
    }
  }
  return spans;
}
