/** @module Agent SDK (`arclight/agent`): rollout context, a pause-aware OpenAI client, reward/event posts, spans. */
/** Reward and event posts to `AGL_EVENT_URL`, idempotent and retried. */
export { EmitFailed, type EmitOptions, emitEvent, emitReward, type StoredEvent } from "./emit.js";
/** The rollout context from the environment (`AGL_*` variables). */
export { type AgentEnv, fromEnv, NotInRollout, tracesUrlOf } from "./env.js";
/** An `openai` client pointed at the proxy whose retries wait out a paused gateway. */
export { type OpenAIClientOptions, openaiClient, pauseAwareFetch } from "./openai.js";
/** The real OpenTelemetry JS SDK, exporting to the gateway (optional peer dependencies). */
export { type OpenTelemetryOptions, type OpenTelemetrySetup, setupOpenTelemetry } from "./otel.js";
/** Span attribute values and attributes of the built-in tracer (what OTLP `AnyValue` holds). */
export type { Attributes, AttributeValue } from "./otlp-json.js";
/** The current built-in span's W3C `traceparent`, for HTTP calls made by hand. */
export { activeTraceparent } from "./span-context.js";
/** The built-in tracer: spans and tool calls exported to the gateway as OTLP/JSON, no OTel dependency. */
export { type SpanHandle, type SpanOptions, span, toolCall } from "./tracer.js";
