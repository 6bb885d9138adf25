/**
 * @module The agent of each model call: the `agent_name` the proxy recorded, else the `gen_ai.agent.name` of the
 * nearest enclosing span. @see OpenTelemetry GenAI semantic conventions
 */
import type { Event } from "./event.js";
import { AGENT_NAME_ATTRIBUTE, SPAN_EVENT_TYPE, type SpanData } from "./span.js";

/** Spans of one attempt by `span_id`. */
export type SpanIndex = ReadonlyMap<string, SpanData>;

/** Span data of one attempt's `span` events by span id (a repeated id keeps the last). */
export function indexSpans(events: readonly Pick<Event, "event_type" | "data">[]): SpanIndex {
  const spans = new Map<string, SpanData>();
  for (const event of events) {
    if (event.event_type !== SPAN_EVENT_TYPE) continue;
    const span = event.data as Partial<SpanData>;
    if (typeof span.span_id === "string") spans.set(span.span_id, span as SpanData);
  }
  return spans;
}

/** The nearest `gen_ai.agent.name` at or above a span, or undefined. */
export function enclosingAgentName(spans: SpanIndex, spanId: string): string | undefined {
  let id: string | null | undefined = spanId;
  // At most one step per stored span: a malformed parent cycle cannot loop forever.
  for (let steps = 0; id && steps <= spans.size; steps++) {
    const span = spans.get(id);
    if (!span) return undefined;
    const name = span.attributes?.[AGENT_NAME_ATTRIBUTE];
    if (typeof name === "string" && name !== "") return name;
    id = span.parent_span_id;
  }
  return undefined;
}

/** The agent of one `model_request` event's data, or undefined when nothing names one. */
export function modelCallAgentName(data: Readonly<Record<string, unknown>>, spans: SpanIndex): string | undefined {
  if (typeof data.agent_name === "string" && data.agent_name !== "") return data.agent_name;
  const context = data.trace_context as { span_id?: unknown } | undefined;
  return typeof context?.span_id === "string" ? enclosingAgentName(spans, context.span_id) : undefined;
}
