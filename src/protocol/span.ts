/**
 * @module The `span` event (one OpenTelemetry span of an agent) and the attributes tying spans to rollouts.
 * @see opentelemetry-proto `opentelemetry/proto/trace/v1/trace.proto`
 */
import { z } from "zod";

/** Event type of a stored span. */
export const SPAN_EVENT_TYPE = "span";

/** Resource or span attribute naming the rollout a span belongs to. */
export const ROLLOUT_ID_ATTRIBUTE = "arclight.rollout_id";
/** Resource or span attribute naming the attempt a span belongs to (the rollout's current attempt when absent). */
export const ATTEMPT_ID_ATTRIBUTE = "arclight.attempt_id";
/** GenAI semantic-convention attribute naming the agent a span (and the model calls inside it) belongs to. */
export const AGENT_NAME_ATTRIBUTE = "gen_ai.agent.name";

/** Span kinds, as the OTLP enum `SpanKind` names them without the prefix. */
export const SPAN_KINDS = ["unspecified", "internal", "server", "client", "producer", "consumer"] as const;
/** Status codes, as the OTLP enum `StatusCode` names them without the prefix. */
export const SPAN_STATUS_CODES = ["unset", "ok", "error"] as const;

const hexId = (length: number) =>
  z.string().regex(new RegExp(`^[0-9a-f]{${length}}$`), `${length} lowercase hex digits`);
/** Nanoseconds since the epoch as a decimal string (they exceed 2^53, so never a JSON number). */
const unixNano = z.string().regex(/^\d{1,20}$/, "decimal nanoseconds");
/** Attributes flattened to a JSON object: OTLP `AnyValue`s become strings, numbers, booleans, arrays and objects. */
const Attributes = z.record(z.string(), z.unknown());

/** A timed annotation inside a span (OTLP `Span.Event`), e.g. an exception. */
export const SpanEventSchema = z.strictObject({
  name: z.string(),
  time_unix_nano: unixNano,
  attributes: Attributes,
});

/** A link from a span to another span (OTLP `Span.Link`). */
export const SpanLinkSchema = z.strictObject({
  trace_id: hexId(32),
  span_id: hexId(16),
  attributes: Attributes,
});

/** `data` of a `span` event; ids are lowercase hex (OTLP/JSON), `parent_span_id` null for a root. */
export const SpanDataSchema = z.strictObject({
  name: z.string(),
  trace_id: hexId(32),
  span_id: hexId(16),
  parent_span_id: hexId(16).nullable(),
  kind: z.enum(SPAN_KINDS),
  start_time_unix_nano: unixNano,
  end_time_unix_nano: unixNano,
  status: z.strictObject({ code: z.enum(SPAN_STATUS_CODES), message: z.string() }),
  attributes: Attributes,
  events: z.array(SpanEventSchema),
  links: z.array(SpanLinkSchema),
  resource: Attributes,
  scope: z.strictObject({ name: z.string(), version: z.string() }),
});
/** `data` of a `span` event. */
export type SpanData = z.infer<typeof SpanDataSchema>;

/** The W3C trace context of a model call. @see https://www.w3.org/TR/trace-context/#traceparent-header */
export interface TraceParent {
  trace_id: string;
  /** The span that made the call (the parent of the gateway's side). */
  span_id: string;
  /** Trace flags, 2 hex digits (`01` = sampled). */
  flags: string;
}

/** Parses a `traceparent` (higher versions by their first four fields, as the spec asks); undefined if malformed. */
export function parseTraceParent(header: string | undefined): TraceParent | undefined {
  const match = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/.exec(header?.trim() ?? "");
  if (!match || match[1] === "ff" || (match[1] === "00" && match[5] !== undefined)) return undefined;
  const [, , traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { trace_id: traceId, span_id: spanId, flags };
}
