/**
 * @module The built-in tracer for agents without OpenTelemetry: spans nest by `await` context and each finished
 * trace is exported to the gateway as OTLP/JSON when its root ends.
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
 * Runs `fn` as a span (nested calls become children); a throw is recorded and rethrown after the export.
 * @param attributes - e.g. `{ "gen_ai.agent.name": "planner" }`: model calls inside then count as that agent's
 * @throws {NotInRollout} before `fn` runs; `EmitFailed` when the gateway refused or kept failing
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

/** Runs `fn` as a tool-call span. @see OpenTelemetry GenAI semantic conventions, "Execute tool span" */
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

/** Posts spans as OTLP/JSON, retrying. @throws {EmitFailed} on a 4xx, a partial-success rejection or exhaustion */
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
