/**
 * @module One proxied model call, end to end: rewrite the body, send it upstream (with retries), answer the agent
 * (JSON, or SSE relayed event by event as it arrives), and record one `model_request` event.
 */
import { once } from "node:events";
import { performance } from "node:perf_hooks";
import { PassThrough } from "node:stream";
import type { FastifyBaseLogger, FastifyReply } from "fastify";
import { NoEndpoint, StoreUnavailable } from "../../protocol/index.js";
import type { Store } from "../../store/store.js";
import type { CallIdentity } from "./agent-identity.js";
import { buildModelRequestData, type CallRecord, type ProxyEndpointKind } from "./capture.js";
import { type KnownJson, modelRequestDataJson } from "./event-json.js";
import type { ProxyLookups } from "./lookups.js";
import type { ProxyOptions } from "./options.js";
import { upstreamRequestIds } from "./request-ids.js";
import { type AgentBody, type ProxyMode, rewriteRequestBody } from "./rewrite.js";
import { SSE_DONE, SseParser, sseEvent } from "./sse.js";
import { StreamAssembler } from "./stream-assembler.js";
import type { CallTranslation } from "./translate/translation.js";
import type { UpstreamAnswer, UpstreamClient } from "./upstream.js";

/** What every call shares: set up once by the route plugin. */
export interface ProxyContext {
  store: Store;
  /** Cached rollout and endpoint reads (see `lookups.ts`). */
  lookups: ProxyLookups;
  options: ProxyOptions;
  upstream: UpstreamClient;
}

/** One agent call. */
export interface ProxyCall {
  kind: ProxyEndpointKind;
  rolloutId: string;
  attemptId: string;
  mode: ProxyMode;
  /**
   * The agent's JSON body: its text, forwarded with only the proxy's fields changed, and the parsed object (for a
   * translated API, the chat body it was translated to, and that body's JSON text).
   */
  body: AgentBody;
  log: FastifyBaseLogger;
  /** Set when the agent speaks another API (Responses, Anthropic Messages): how to answer it. */
  translation?: CallTranslation;
  /** Agent name and trace context, recorded on the event (`agent-identity.ts`). */
  identity?: CallIdentity;
  /** The agent's own request id (body `request_id` or `x-request-id` header), recorded as `agent_request_id`. */
  agentRequestId?: string;
}

/** A call with the request ids recorded on its event (see `request-ids.ts`). */
type TrackedCall = ProxyCall & { requestIds: { agent_request_id?: string; upstream_request_id: string } };

const UPSTREAM_PATHS: Record<ProxyEndpointKind, string> = { chat: "/chat/completions", completions: "/completions" };

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Runs one call and answers the agent on `reply`; resolves once the answer is complete and the event recorded.
 * @throws {NoEndpoint} no endpoint is registered for the model (nothing recorded)
 * @throws {UpstreamFailed} no answer after every try (recorded as an error event; the agent gets 502)
 * @throws {UpstreamTimeout} the upstream timed out (recorded; 504)
 */
export async function forwardCall(ctx: ProxyContext, call: ProxyCall, reply: FastifyReply): Promise<void> {
  const startedAt = performance.now();
  const ids = upstreamRequestIds();
  // The agent's body `request_id` is replaced per try; a body without one stays without (vLLM names the request
  // after the x-request-id header first, which every try carries).
  const replaceBodyId = typeof call.body.value.request_id === "string";
  const upstreamBody = rewriteRequestBody(
    call.kind,
    call.body,
    call.mode,
    ctx.options,
    replaceBodyId ? ids.idOf(0) : undefined,
  );
  const request = upstreamBody.value;
  const requestText = upstreamBody.text;
  const model = request.model as string;
  const endpoints = await ctx.lookups.endpointsOf(model);
  if (endpoints.length === 0) throw new NoEndpoint(model);
  const abort = new AbortController();
  const onClose = (): void => abort.abort();
  reply.raw.once("close", onClose);
  const base = { kind: call.kind, model, request, requestText };
  try {
    const answer = await ctx.upstream.send({
      path: UPSTREAM_PATHS[call.kind],
      body: requestText,
      rolloutId: call.rolloutId,
      endpoints,
      stream: request.stream === true,
      signal: abort.signal,
      attempt: (n) => ({ body: replaceBodyId ? ids.bodyOf(requestText, n) : requestText, requestId: ids.idOf(n) }),
    });
    const requestIds = {
      ...(call.agentRequestId === undefined ? {} : { agent_request_id: call.agentRequestId }),
      upstream_request_id: ids.idOf(answer.retryCount),
    };
    if (!answer.ok) {
      const latencyMs = performance.now() - startedAt;
      const error = { message: answer.error.message, code: answer.error.code };
      const record = { ...base, endpoint: answer.endpoint, response: null, error, latencyMs };
      const known = { request, requestText };
      const failed = { ...record, httpStatus: answer.error.status, retryCount: answer.retryCount };
      await recordCall(ctx, { ...call, requestIds }, failed, known);
      throw answer.error;
    }
    if (answer.stream) await relayStream(ctx, { ...call, requestIds }, answer, reply, { ...base, startedAt });
    else await relayBody(ctx, { ...call, requestIds }, answer, reply, { ...base, startedAt });
  } finally {
    reply.raw.off("close", onClose);
  }
}

interface CallBase {
  kind: ProxyEndpointKind;
  model: string;
  request: Record<string, unknown>;
  /** The text sent upstream (the agent's text with the proxy's fields spliced in); `request` is its value. */
  requestText: string;
  startedAt: number;
}

/** A whole (non-stream, or non-2xx) answer: recorded, then sent to the agent byte for byte with its status. */
async function relayBody(
  ctx: ProxyContext,
  call: TrackedCall,
  answer: UpstreamAnswer,
  reply: FastifyReply,
  base: CallBase,
): Promise<void> {
  const text = answer.body!.toString("utf8");
  const parsed = parseJson(text);
  const ok = answer.statusCode >= 200 && answer.statusCode < 300 && typeof parsed === "object" && parsed !== null;
  const record = {
    ...base,
    endpoint: answer.endpoint,
    response: ok ? (parsed as Record<string, unknown>) : null,
    error: ok ? null : (parsed ?? { message: text.slice(0, 4096) }),
    latencyMs: performance.now() - base.startedAt,
    httpStatus: answer.statusCode,
    retryCount: answer.retryCount,
  };
  await recordCall(ctx, call, record, { ...base, response: parsed, responseText: text });
  if (call.translation) {
    const translated = ok
      ? call.translation.body(parsed as Record<string, unknown>)
      : call.translation.error(answer.statusCode, parsed);
    void reply.status(answer.statusCode).header("content-type", "application/json").send(translated);
    return;
  }
  void reply
    .status(answer.statusCode)
    .header("content-type", answer.contentType || "application/json")
    .send(answer.body);
}

/** vLLM's mid-stream error event shape (`ErrorResponse`), sent when the upstream breaks after the stream began. */
function streamErrorEvent(message: string, code: number): string {
  const error = { error: { message, type: code === 504 ? "GatewayTimeout" : "BadGateway", param: null, code } };
  return sseEvent(JSON.stringify(error)) + sseEvent(SSE_DONE);
}

/** Starts the SSE answer to the agent with the upstream's status; the returned stream is its body. */
function openAgentStream(call: ProxyCall, status: number, reply: FastifyReply): PassThrough {
  const out = new PassThrough();
  // A write after the agent hung up fails here; the upstream side is aborted by the reply's "close" and recorded.
  out.on("error", (err) => call.log.debug({ err }, "agent stream closed"));
  void reply
    .status(status)
    .header("content-type", call.translation?.streamContentType ?? "text/event-stream; charset=utf-8")
    .header("cache-control", "no-cache")
    .header("x-accel-buffering", "no")
    .send(out);
  return out;
}

/**
 * A 2xx SSE answer: each upstream network chunk's complete events are written to the agent at once (a partial event
 * is held until its end arrives, so the agent never sees half an event) while the assembler builds the equivalent
 * non-stream body. If the upstream breaks, the agent gets a vLLM-style error event and `[DONE]`; nothing is retried.
 */
async function relayStream(
  ctx: ProxyContext,
  call: TrackedCall,
  answer: UpstreamAnswer,
  reply: FastifyReply,
  base: CallBase,
): Promise<void> {
  const out = openAgentStream(call, answer.statusCode, reply);
  const translation = call.translation;
  const parser = new SseParser();
  const assembler = new StreamAssembler(call.kind);
  let sawDone = false;
  let failure: { message: string; code: number } | null = null;
  let upstreamErrorSeen = false;
  const relay = (events: string[]): boolean => {
    let text = "";
    for (const data of events) {
      if (data === SSE_DONE) sawDone = true;
      const parsed = data === SSE_DONE ? undefined : parseJson(data);
      if (parsed !== undefined) assembler.add(parsed);
      if (!translation) text += sseEvent(data);
      else if (parsed !== null && typeof parsed === "object" && !upstreamErrorSeen) {
        const error = (parsed as { error?: { message?: unknown; code?: unknown } }).error;
        upstreamErrorSeen = error !== undefined;
        text += error
          ? translation.streamError(String(error.message ?? "upstream error"), Number(error.code) || 502)
          : translation.chunk(parsed as Record<string, unknown>);
      }
    }
    return text === "" || out.write(text);
  };
  try {
    for await (const chunk of answer.stream!) {
      if (!relay(parser.feed(chunk as Buffer)) && !out.destroyed) await once(out, "drain");
    }
    relay(parser.end());
    if (!sawDone) failure = { message: "upstream closed the stream before [DONE]", code: 502 };
  } catch (err) {
    const timedOut = (err as { code?: string }).code === "UND_ERR_BODY_TIMEOUT";
    const what = timedOut ? `sent nothing for ${ctx.options.upstreamTimeoutMs} ms` : "broke";
    failure = { message: `upstream stream ${what}: ${(err as Error).message}`, code: timedOut ? 504 : 502 };
    call.log.warn({ err, rolloutId: call.rolloutId }, "upstream stream failed");
  }
  const assembled = assembler.finish();
  const upstreamError = assembled.error;
  const recorded = recordCall(
    ctx,
    call,
    {
      ...base,
      endpoint: answer.endpoint,
      response: assembled.response,
      error: failure ? { message: failure.message } : upstreamError,
      latencyMs: performance.now() - base.startedAt,
      httpStatus: failure?.code ?? streamStatus(upstreamError, answer.statusCode),
      retryCount: answer.retryCount,
      captureIncomplete: assembled.captureIncomplete,
    },
    base,
  );
  try {
    await recorded;
  } catch (err) {
    // The event may be lost (database gone): cut the stream before its end, so the agent sees a failed call.
    out.destroy(err as Error);
    return;
  }
  if (!out.destroyed) {
    const tail = streamTail(translation, failure, upstreamErrorSeen, assembled.response);
    if (tail !== "") out.write(tail);
  }
  out.end();
}

/** The recorded status of a stream that ended: the upstream error event's code (502 without one), else `status`. */
function streamStatus(upstreamError: unknown, status: number): number {
  if (!upstreamError) return status;
  const code = (upstreamError as { error?: { code?: unknown } }).error?.code;
  return typeof code === "number" ? code : 502;
}

/**
 * What the agent gets after the relayed events: a translated stream's error or closing events, or vLLM's error event
 * when the untranslated stream failed; "" when nothing is owed (the upstream's own error event was passed on).
 */
function streamTail(
  translation: ProxyCall["translation"],
  failure: { message: string; code: number } | null,
  upstreamErrorSeen: boolean,
  response: Parameters<NonNullable<ProxyCall["translation"]>["end"]>[0],
): string {
  if (translation && failure && !upstreamErrorSeen) return translation.streamError(failure.message, failure.code);
  if (translation && !failure && !upstreamErrorSeen) return translation.end(response);
  if (!translation && failure) return streamErrorEvent(failure.message, failure.code);
  return "";
}

/**
 * Appends the call's `model_request` event, its JSON text reusing the request and response texts already held. A
 * failed append is logged, never turned into a failed agent call, except when the store is unreachable: the event may
 * then be lost, so the agent must not take the answer as recorded (503 before the answer, a cut stream after it).
 * @throws {StoreUnavailable} the store lost its database connection
 */
async function recordCall(ctx: ProxyContext, call: TrackedCall, record: CallRecord, known: KnownJson): Promise<void> {
  try {
    const data = { ...buildModelRequestData(record), ...call.identity, ...call.requestIds };
    const dataJson = modelRequestDataJson(data, known);
    await ctx.store.appendEvents(call.rolloutId, call.attemptId, [{ event_type: "model_request", data, dataJson }]);
  } catch (err) {
    call.log.error({ err, rolloutId: call.rolloutId, attemptId: call.attemptId }, "model_request event not recorded");
    if (err instanceof StoreUnavailable) throw err;
  }
}
