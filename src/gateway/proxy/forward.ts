/**
 * @module One proxied model call, end to end: rewrite the body, send it upstream (with retries), answer the agent
 * (JSON, or SSE relayed event by event as it arrives), and record one `model_request` event.
 */
import { performance } from "node:perf_hooks";
import type { FastifyReply } from "fastify";
import { withOpenaiError } from "../../http/error-handler.js";
import { agentFilter } from "../../protocol/agent-match.js";
import { NoEndpoint } from "../../protocol/index.js";
import { quoteStart } from "../../protocol/text.js";
import { DrainDeadline, startCall } from "./call-lifetime.js";
import type { CallRecord, CaptureReason, ProxyEndpointKind } from "./capture.js";
import type { ProxyOptions } from "./options.js";
import type { ProxyCall, ProxyContext, TrackedCall } from "./proxy-call.js";
import { recordCall } from "./record-call.js";
import { upstreamRequestIds } from "./request-ids.js";
import { rewriteRequestBody } from "./rewrite.js";
import { relayStream } from "./stream-relay.js";
import { forwardTitoCall } from "./tito/tito-call.js";
import type { UpstreamAnswer } from "./upstream.js";

/** The call types live in `proxy-call.ts` (the relay and the recorder share them); re-exported for the routes. */
export type { ProxyCall, ProxyContext } from "./proxy-call.js";

const UPSTREAM_PATHS: Record<ProxyEndpointKind, string> = { chat: "/chat/completions", completions: "/completions" };

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Runs one call and answers the agent on `reply`; resolves once the answer is complete and the event recorded. A
 * success reaches the agent only once its event is committed (see `record-call.ts` and `stream-relay.ts`).
 * @throws {NoEndpoint} no endpoint is registered for the model (nothing recorded)
 * @throws {UpstreamFailed} no answer after every try (recorded as an error event; the agent gets 502)
 * @throws {UpstreamTimeout} the upstream timed out (recorded; 504)
 * @throws {StoreUnavailable} the answer's event could not be committed: the agent gets 503 + `Retry-After` instead of
 *   the answer
 */
export async function forwardCall(ctx: ProxyContext, call: ProxyCall, reply: FastifyReply): Promise<void> {
  const startedAt = performance.now();
  const ids = upstreamRequestIds();
  // The agent's body `request_id` is replaced per try; a body without one stays without (vLLM names the request
  // after the x-request-id header first, which every try carries).
  const replaceBodyId = typeof call.body.value.request_id === "string";
  const options = routedOptions(ctx.options, ctx.routeAgent?.(call.identity?.agent_name));
  const upstreamBody = rewriteRequestBody(
    call.kind,
    call.body,
    call.mode,
    options,
    replaceBodyId ? ids.idOf(0) : undefined,
  );
  const request = upstreamBody.value;
  const requestText = upstreamBody.text;
  const model = request.model as string;
  const endpoints = await ctx.lookups.endpointsOf(model);
  if (endpoints.length === 0) throw new NoEndpoint(model);
  // A tito model's chat calls build their prompt ids in the gateway (tito/tito-call.ts).
  if (call.kind === "chat" && endpoints[0]!.mode === "tito") return forwardTitoCall(ctx, call, endpoints, reply);
  const running = startCall(ctx.inflight, reply, ctx.options.upstreamTotalTimeoutMs);
  const { signal } = running;
  const base = { kind: call.kind, model, request, requestText, startedAt };
  try {
    const answer = await ctx.upstream.send({
      path: UPSTREAM_PATHS[call.kind],
      body: requestText,
      rolloutId: call.rolloutId,
      endpoints,
      stream: request.stream === true,
      signal,
      attempt: (n) => ({ body: replaceBodyId ? ids.bodyOf(requestText, n) : requestText, requestId: ids.idOf(n) }),
    });
    const upstreamRequestId = ids.idOf(answer.retryCount);
    const requestIds: TrackedCall["requestIds"] =
      call.agentRequestId === undefined
        ? { upstream_request_id: upstreamRequestId }
        : { agent_request_id: call.agentRequestId, upstream_request_id: upstreamRequestId };
    // The route's call object becomes the tracked call (not copied: this runs on every call).
    const tracked: TrackedCall = Object.assign(call, { requestIds, signal });
    if (!answer.ok) {
      const { endpoint, retryCount } = answer;
      // The agent's message names no endpoint; the log does.
      call.log.warn({ err: answer.error, endpoint: endpoint.endpoint, retryCount }, "upstream call failed");
      const latencyMs = performance.now() - startedAt;
      const error = { message: answer.error.message, code: answer.error.code };
      const failed: CallRecord = {
        kind: base.kind,
        model,
        request,
        endpoint: answer.endpoint,
        response: null,
        error,
        latencyMs,
        httpStatus: answer.error.status,
        retryCount: answer.retryCount,
      };
      // The agent gets the upstream's failure either way; a failed record is logged by recordCall.
      await recordCall(ctx.store, tracked, failed, { request, requestText }).catch(() => undefined);
      if (signal.reason instanceof DrainDeadline) await recordAbort(ctx, tracked, signal.reason, latencyMs);
      throw answer.error;
    }
    if (answer.stream) await relayStream(ctx, tracked, answer, reply, base);
    else await relayBody(ctx, tracked, answer, reply, base);
    if (signal.reason instanceof DrainDeadline) {
      await recordAbort(ctx, tracked, signal.reason, performance.now() - startedAt);
    }
  } finally {
    running.end();
  }
}

/**
 * Appends an `abort` event when the drain deadline cut the call short (beside its `model_request` error), so the
 * trainer and an operator see which calls a weight update aborted. A failed append is logged only: the agent already
 * has its error.
 * @param reason - the call's abort reason, when it is the drain deadline (the callers check: most calls are not cut)
 */
async function recordAbort(
  ctx: ProxyContext,
  call: TrackedCall,
  reason: DrainDeadline,
  latencyMs: number,
): Promise<void> {
  const data = {
    reason: "drain_deadline",
    message: reason.message,
    drain_timeout_ms: reason.limitMs,
    latency_ms: latencyMs,
    upstream_request_id: call.requestIds.upstream_request_id,
  };
  try {
    await ctx.store.appendEvents(call.rolloutId, call.attemptId, [{ event_type: "abort", data }]);
  } catch (err) {
    call.log.error({ err, rolloutId: call.rolloutId }, "abort event not recorded");
  }
}

/** Passes the upstream's `Retry-After` on with a final 429 or 503, so the agent's client waits as the server asked. */
function withRetryAfter(reply: FastifyReply, answer: UpstreamAnswer): FastifyReply {
  const passOn = answer.retryAfter !== undefined && (answer.statusCode === 429 || answer.statusCode === 503);
  return passOn ? reply.header("retry-after", answer.retryAfter!) : reply;
}

interface CallBase {
  kind: ProxyEndpointKind;
  model: string;
  request: Record<string, unknown>;
  /** The text sent upstream (the agent's text with the proxy's fields spliced in); `request` is its value. */
  requestText: string;
  startedAt: number;
}

/**
 * A whole (non-stream, or non-2xx) answer: recorded, then sent to the agent byte for byte with its status, except an
 * answer that is none: a 2xx whose body is not a JSON object (an array, a number, HTML, nothing) is recorded as an
 * error with incomplete capture and answered 502, and an error answer with no body gets a detail (see
 * {@link substituteAnswer}).
 * @throws {StoreUnavailable} the event could not be committed (nothing is sent; the route answers 503)
 */
async function relayBody(
  ctx: ProxyContext,
  call: TrackedCall,
  answer: UpstreamAnswer,
  reply: FastifyReply,
  base: CallBase,
): Promise<void> {
  const text = answer.body!.toString("utf8");
  const parsed = parseJson(text);
  const is2xx = answer.statusCode >= 200 && answer.statusCode < 300;
  const isObject = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed);
  const ok = is2xx && isObject;
  const captureReasons: CaptureReason[] = is2xx && !isObject ? ["response_not_object"] : [];
  const substitute = ok ? undefined : substituteAnswer(base.model, answer, text, is2xx);
  if (substitute) {
    // An operator sees it at the default level, as a failed upstream call is; the log names the endpoint.
    const { statusCode: upstreamStatus, endpoint } = answer;
    call.log.warn(
      { upstreamStatus, endpoint: endpoint.endpoint, code: substitute.body.code },
      "upstream answer unusable",
    );
  }
  const record: CallRecord = {
    kind: base.kind,
    model: base.model,
    request: base.request,
    endpoint: answer.endpoint,
    response: ok ? (parsed as Record<string, unknown>) : null,
    error: ok ? null : substitute ? substitute.error : (parsed ?? { message: text.slice(0, 4096) }),
    latencyMs: performance.now() - base.startedAt,
    httpStatus: answer.statusCode,
    retryCount: answer.retryCount,
    captureIncomplete: captureReasons.length > 0,
    captureReasons,
  };
  await recordCall(ctx.store, call, record, {
    request: base.request,
    requestText: base.requestText,
    response: parsed,
    responseText: text,
  });
  if (!call.translation && !substitute) {
    void withRetryAfter(reply, answer)
      .status(answer.statusCode)
      .header("content-type", answer.contentType || "application/json")
      .send(answer.body);
    return;
  }
  const status = substitute?.status ?? answer.statusCode;
  // A translated error's message: the upstream's JSON error, the detail that replaces an unusable answer, or its text.
  const body = !call.translation
    ? withOpenaiError(status, substitute!.body)
    : ok
      ? call.translation.body(parsed as Record<string, unknown>)
      : call.translation.error(status, substitute?.body ?? parsed ?? { detail: text.slice(0, 4096) });
  void withRetryAfter(reply, answer).status(status).header("content-type", "application/json").send(body);
}

/** What the agent gets in place of an upstream answer that is none, and what the event records as its error. */
interface SubstituteAnswer {
  status: number;
  /** The gateway's error shape (the plain routes add OpenAI's `error` object to it). */
  body: { detail: string; code: string };
  /** The event's `error`: the detail and code, and the start of what the upstream sent, when it sent anything. */
  error: { message: string; code: string; upstream_body?: string };
}

/**
 * The answer that replaces an upstream's unusable one, or undefined when the upstream's goes to the agent as it is.
 * - A 2xx whose body is not a JSON object: 502 `upstream_bad_answer` (no client reads it as an answer; relaying the
 *   2xx told the agent it had succeeded while the event said error).
 * - An error status with an empty (or whitespace) body: that status, `upstream_empty_body` (the agent could not tell
 *   it from the gateway's own answers).
 * The detail names the model, never the endpoint's address (docs/security.md).
 * @param model - the call's model
 * @param answer - the upstream's answer
 * @param text - its body as text
 * @param is2xx - whether its status is 2xx
 */
function substituteAnswer(
  model: string,
  answer: UpstreamAnswer,
  text: string,
  is2xx: boolean,
): SubstituteAnswer | undefined {
  const empty = text.trim() === "";
  if (!is2xx && !empty) return undefined;
  const what = empty
    ? "an empty body"
    : `a body that is not a JSON object (${quoteStart(answer.contentType, 100) || "no content-type"})`;
  const detail = `Upstream of model ${quoteStart(model, 200)} answered ${answer.statusCode} with ${what}`;
  const code = is2xx ? "upstream_bad_answer" : "upstream_empty_body";
  const error = empty ? { message: detail, code } : { message: detail, code, upstream_body: text.slice(0, 4096) };
  return { status: is2xx ? 502 : answer.statusCode, body: { detail, code }, error };
}

/** Agent name (or `/regex/`) → model name the call is looked up and sent upstream as. */
export type AgentRoutes = Readonly<Record<string, string>>;

/**
 * Compiles the routes once.
 * @param routes - entries in config order; the first that matches wins
 * @returns agent name → routed model name, or undefined when no entry matches (or the call names no agent)
 * @throws {SyntaxError} for a `/regex/` entry that does not compile (the config schema refuses it first)
 */
export function agentRouter(routes: AgentRoutes): (agentName: string | undefined) => string | undefined {
  const compiled = Object.entries(routes).map(([entry, model]) => ({ matches: agentFilter([entry]), model }));
  return (agentName) => compiled.find((route) => route.matches(agentName))?.model;
}

/**
 * The proxy options for one call: the routed model name in place of `modelName` when the call's agent is routed.
 * @param options - the proxy's options
 * @param routedModel - what {@link agentRouter} gave the call's agent
 * @returns `options` itself, or a copy naming the routed model
 */
export function routedOptions(options: ProxyOptions, routedModel: string | undefined): ProxyOptions {
  return routedModel === undefined ? options : { ...options, modelName: routedModel };
}
