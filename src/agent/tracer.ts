/**
 * @module The built-in tracer, for agents without OpenTelemetry: `span(name, fn, attributes)` and
 * `toolCall(name, fn)` time a function, nest by `await` context, and export each finished trace to the gateway as
 * OTLP/JSON (`POST /v1/traces`), the same shape an OTel exporter sends. Spans under one root are exported together
 * when the root ends; a model call made inside a span through {@link openaiClient} carries its `traceparent`.
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { EmitFailed } from "./emit.js";
import { type AgentEnv, fromEnv, tracesUrlOf } from "./env.js";
import { type Attributes, type AttributeValue, type FinishedSpan, otlpJsonRequest } from "./otlp-json.js";
import { backoffMs, retryAfterMs, sleep } from "./retry.js";
import { type ActiveSpan, spanStorage, type TraceBatch } from "./span-context.js";

/** Instrumentation scope of the built-in tracer's spans. */
const SCOPE = { name: "arclight.agent", version: "1" };
const KIND_INTERNAL = 1;

/** Options of {@link span} and {@link toolCall}. */
export interface SpanOptions {
  /** Rollout context; default {@link fromEnv}(). */
  env?: AgentEnv;
  /** Export retries after the first try; default 8. */
  retries?: number;
}

/** The running span, handed to the traced function. */
export interface SpanHandle {
  readonly traceId: string;
  readonly spanId: string;
  /** Adds or replaces an attribute (e.g. a tool's result). */
  setAttribute(key: string, value: AttributeValue): void;
}

/** Nanoseconds since the epoch, to the microsecond `performance.now()` gives. */
function nowUnixNano(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
}

function errorOf(err: unknown): FinishedSpan["error"] {
  const e = err instanceof Error ? err : new Error(String(err));
  return { type: e.name, message: e.message, stack: e.stack ?? "" };
}

/**
 * Runs `fn` as a span. Nested calls (also across `await`) become child spans. When the outermost span ends, its whole
 * trace is exported; when `fn` throws, the span records the error (status error, `exception` event) and the error is
 * rethrown after the export.
 * @param name - span name, e.g. `plan` or `retrieve documents`
 * @param fn - the work; receives the span to add attributes
 * @param attributes - initial attributes, e.g. `{ "gen_ai.agent.name": "planner" }` (model calls inside then count as
 *   that agent's)
 * @param options - rollout context and export retries
 * @returns what `fn` returns
 * @throws {NotInRollout} outside a rollout (before `fn` runs)
 * @throws {EmitFailed} the gateway refused the spans (4xx, or some rejected in its partial-success answer) or kept
 *   failing; `fn` has run (when it threw too, its error is the `cause`)
 * @throws whatever `fn` throws, once the trace is exported
 */
export async function span<T>(
  name: string,
  fn: (span: SpanHandle) => T | Promise<T>,
  attributes: Attributes = {},
  options: SpanOptions = {},
): Promise<T> {
  const env = options.env ?? fromEnv();
  const parent = spanStorage.getStore();
  const batch: TraceBatch = parent?.batch ?? { finished: [], exported: false };
  const active: ActiveSpan = {
    traceId: parent?.traceId ?? randomBytes(16).toString("hex"),
    spanId: randomBytes(8).toString("hex"),
    batch,
  };
  const attrs: Attributes = { ...attributes };
  const handle: SpanHandle = {
    traceId: active.traceId,
    spanId: active.spanId,
    setAttribute: (key, value) => {
      attrs[key] = value;
    },
  };
  const start = nowUnixNano();
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await spanStorage.run(active, () => fn(handle)) };
  } catch (error) {
    outcome = { ok: false, error };
  }
  const finished: FinishedSpan = {
    name,
    traceId: active.traceId,
    spanId: active.spanId,
    parentSpanId: parent?.spanId,
    kind: KIND_INTERNAL,
    startTimeUnixNano: start,
    endTimeUnixNano: nowUnixNano(),
    attributes: attrs,
    ...(outcome.ok ? {} : { error: errorOf(outcome.error) }),
  };
  try {
    await finish(env, batch, finished, parent === undefined, options.retries ?? 8);
  } catch (err) {
    if (!outcome.ok) (err as Error).cause ??= outcome.error;
    throw err;
  }
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/**
 * Runs `fn` as a tool-call span (GenAI conventions: name `execute_tool {name}`, `gen_ai.operation.name`
 * `execute_tool`, `gen_ai.tool.name`).
 * @param name - the tool's name
 * @param fn - the tool's work
 * @param attributes - more attributes (arguments, results)
 * @returns what `fn` returns
 * @throws see {@link span}
 * @see OpenTelemetry GenAI semantic conventions, "Execute tool span"
 */
export function toolCall<T>(
  name: string,
  fn: (span: SpanHandle) => T | Promise<T>,
  attributes: Attributes = {},
  options: SpanOptions = {},
): Promise<T> {
  return span(
    `execute_tool ${name}`,
    fn,
    { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, ...attributes },
    options,
  );
}

/** Files a finished span: a root exports its batch; a span ending after its root was exported goes alone. */
async function finish(env: AgentEnv, batch: TraceBatch, span: FinishedSpan, isRoot: boolean, retries: number) {
  if (batch.exported) return exportSpans(env, [span], retries);
  batch.finished.push(span);
  if (!isRoot) return;
  batch.exported = true;
  // Parents end after their children: the root comes last; export it first so the trace reads top-down.
  await exportSpans(env, [span, ...batch.finished.slice(0, -1)], retries);
}

/**
 * Posts spans to the attempt's traces URL as OTLP/JSON, retrying transport errors, 5xx and 429.
 * @throws {EmitFailed} a 4xx answer, a partial-success rejection, or retries exhausted
 */
async function exportSpans(env: AgentEnv, spans: readonly FinishedSpan[], retries: number): Promise<void> {
  const resource: Attributes = {
    "service.name": env.serviceName ?? "arclight-agent",
    "arclight.rollout_id": env.rolloutId,
    "arclight.attempt_id": env.attemptId,
  };
  const body = JSON.stringify(otlpJsonRequest(resource, SCOPE, spans));
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (env.apiKey !== "") headers.authorization = `Bearer ${env.apiKey}`;
  let lastError: EmitFailed | undefined;
  for (let retry = 0; retry <= retries; retry++) {
    if (retry > 0) await sleep(backoffMs(retry - 1));
    let response: Response;
    try {
      response = await fetch(tracesUrlOf(env), { method: "POST", headers, body });
    } catch (cause) {
      lastError = new EmitFailed(`exporting spans failed: ${(cause as Error).message}`, undefined, { cause });
      continue;
    }
    const text = await response.text();
    if (response.ok) return checkPartialSuccess(text, response.status);
    lastError = new EmitFailed(`gateway answered ${response.status} to spans: ${text.slice(0, 500)}`, response.status);
    if (response.status === 429) await sleep(Math.min(60_000, retryAfterMs(response.headers) ?? 0));
    else if (response.status < 500) throw lastError;
  }
  throw lastError ?? new EmitFailed("exporting spans failed", undefined);
}

function checkPartialSuccess(text: string, status: number): void {
  let partial: { rejectedSpans?: unknown; errorMessage?: unknown } | undefined;
  try {
    partial = (JSON.parse(text) as { partialSuccess?: typeof partial }).partialSuccess;
  } catch {
    return;
  }
  if (partial && Number(partial.rejectedSpans ?? 0) > 0) {
    throw new EmitFailed(`gateway rejected ${partial.rejectedSpans} span(s): ${String(partial.errorMessage)}`, status);
  }
}
