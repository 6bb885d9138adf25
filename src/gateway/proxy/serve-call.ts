/**
 * @module Serves one model call, top to bottom: pause gate → attempt check → API translation (Responses, Anthropic)
 * → the calling agent and request ids → the upstream body → endpoints (a `tito` model's chat call goes to
 * `tito/tito-call.ts`) → send with retries (`upstream.ts`) → the answer, whole here or relayed as SSE
 * (`stream-relay.ts`), each recorded (`record-call.ts`) before the agent gets it.
 */
import type { IncomingHttpHeaders } from "node:http";
import { performance } from "node:perf_hooks";
import type { FastifyBaseLogger, FastifyReply } from "fastify";
import { withOpenaiError } from "../../http/error-handler.js";
import {
  BadRequest,
  currentAttemptOf,
  isTerminal,
  NoEndpoint,
  NotFound,
  RolloutFinished,
  RolloutNotFound,
} from "../../protocol/index.js";
import { quoteStart } from "../../protocol/text.js";
import type { Store } from "../../store/store.js";
import { TokenizerFolders } from "../../wire/tokenizer-folder.js";
import type { JsonBodyText } from "../json-body.js";
import { DrainDeadline, InflightCalls, startCall, watchDrain } from "./call-lifetime.js";
import {
  agentRequestId,
  agentRouter,
  type CallBase,
  callIdentity,
  type ProxyCall,
  type ProxyContext,
  type ProxyEndpointKind,
  type ProxyMode,
  parseJson,
  rewriteRequestBody,
  routedOptions,
  type TrackedCall,
  upstreamRequestIds,
} from "./call-request.js";
import { ProxyLookups } from "./lookups.js";
import type { ProxyOptions } from "./options.js";
import type { PauseController } from "./pause.js";
import { type CallRecord, type CaptureReason, recordAbort, recordCall } from "./record-call.js";
import { relayStream } from "./stream-relay.js";
import { forwardTitoCall } from "./tito/tito-call.js";
import { translateAnthropicCall } from "./translate/anthropic-call.js";
import { ResponseHistory } from "./translate/response-history.js";
import { translateResponsesCall } from "./translate/responses-call.js";
import type { TranslatedCall } from "./translate/translation.js";
import { EndpointPicker, type UpstreamAnswer, UpstreamClient } from "./upstream.js";

/**
 * The model-call endpoints, each a path below `/proxy/rollout/{rid}/attempt/{aid}/mode/{mode}/`: the upstream kind,
 * and the API translated to chat completions.
 */
export const CALL_ENDPOINTS = {
  "openai/v1/chat/completions": { kind: "chat", api: "openai" },
  "openai/v1/completions": { kind: "completions", api: "openai" },
  "openai/v1/responses": { kind: "chat", api: "responses" },
  "anthropic/v1/messages": { kind: "chat", api: "anthropic" },
} as const satisfies Record<string, { kind: ProxyEndpointKind; api: string }>;

/** The proxy routes' path pattern up to the endpoint, as Fastify names the routes (metrics, access checks). */
export const PROXY_ROUTE_PREFIX = "/proxy/rollout/:rid/attempt/:aid/mode/:mode";

/** One of {@link CALL_ENDPOINTS}' paths. */
export type CallEndpoint = keyof typeof CALL_ENDPOINTS;

/** The path parameters of a proxy route, as sent. */
export interface CallParams {
  rid: string;
  aid: string;
  mode: string;
}

/** One model call as it arrived. */
export interface IncomingCall {
  endpoint: CallEndpoint;
  params: CallParams;
  /** The parsed JSON body with its text; undefined for an empty body. */
  body: JsonBodyText | undefined;
  headers: IncomingHttpHeaders;
  /** The request's logger (it carries the request id). */
  log: FastifyBaseLogger;
}

const MODES = new Set<string>(["train", "val"]);

/** @throws {NotFound} a mode other than `train` or `val` (404) */
export function checkMode(mode: string): asserts mode is ProxyMode {
  if (!MODES.has(mode)) throw new NotFound(`Unknown proxy mode ${mode} (expected train or val)`);
}

/** The model-call handler and what its calls share; one per gateway app. */
export class ProxyService {
  /** What every call shares. */
  readonly ctx: ProxyContext;
  private readonly history = new ResponseHistory();
  private readonly stopDrainWatch: () => void;

  /**
   * @param store - the gateway's store
   * @param options - the resolved proxy options
   * @param pause - the pause gate, shared with whoever pauses the gateway around a weight update
   * @param log - where the service's own lines go (pause lease expiry, calls aborted at the drain deadline)
   */
  constructor(
    store: Store,
    options: ProxyOptions,
    readonly pause: PauseController,
    log: FastifyBaseLogger,
  ) {
    const picker = new EndpointPicker(options.endpointCooldownBaseMs, options.endpointCooldownMaxMs);
    this.ctx = {
      store,
      lookups: new ProxyLookups(store),
      options,
      upstream: new UpstreamClient(options, picker),
      tokenizers: new TokenizerFolders(),
      routeAgent: agentRouter(options.agentRoutes),
      inflight: new InflightCalls(),
    };
    pause.onLeaseExpired((reason) => log.warn({ reason }, "proxy pause lease expired; proxy resumed"));
    const { drainTimeoutMs } = options;
    this.stopDrainWatch = watchDrain(this.ctx.inflight, pause, drainTimeoutMs, (count) =>
      log.warn({ count, drainTimeoutMs }, "proxy paused; aborted calls past the drain deadline"),
    );
  }

  /**
   * Serves one model call; resolves once the answer is complete and its event recorded.
   * @throws {NotFound} unknown mode (404); {@link RolloutNotFound} (404); `StaleAttempt` superseded attempt (409);
   *   {@link RolloutFinished} the rollout is terminal (409); {@link BadRequest} body not a JSON object (400); and
   *   what {@link forwardCall} throws
   */
  async serve(incoming: IncomingCall, reply: FastifyReply): Promise<void> {
    const { rid, aid, mode } = incoming.params;
    checkMode(mode);
    const release = this.pause.tryEnter();
    if (release === null) {
      sendPaused(reply, this.pause);
      return;
    }
    try {
      const ctx = this.ctx;
      ctx.lookups.refresh();
      await checkAttempt(ctx, rid, aid);
      const body = incoming.body;
      const value = body?.value;
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw new BadRequest("Request body must be a JSON object");
      }
      const agentBody = value as Record<string, unknown>;
      const { kind, api } = CALL_ENDPOINTS[incoming.endpoint];
      const translated = this.translate(api, agentBody, rid);
      const call = {
        kind,
        rolloutId: rid,
        attemptId: aid,
        mode,
        body: translated
          ? { text: JSON.stringify(translated.chat), value: translated.chat }
          : { text: body!.text, value: agentBody },
        log: incoming.log,
        translation: translated?.translation,
        identity: callIdentity(incoming.headers, agentBody.model, ctx.options.agentModels),
        agentRequestId: agentRequestId(agentBody, incoming.headers),
      };
      await forwardCall(ctx, call, reply);
    } finally {
      release();
    }
  }

  /** Stops the drain watchdog and closes the upstream pool. */
  async close(): Promise<void> {
    this.stopDrainWatch();
    await this.ctx.upstream.close();
  }

  /** A translated API's call as chat completions; undefined for OpenAI's own APIs. */
  private translate(api: string, body: Record<string, unknown>, rolloutId: string): TranslatedCall | undefined {
    if (api === "responses") return translateResponsesCall(body, rolloutId, this.history);
    if (api === "anthropic") return translateAnthropicCall(body);
    return undefined;
  }
}

/** 429 for a paused gateway: AGL's body (`error`, `reason`) plus `detail`, and AGL's headers. */
function sendPaused(reply: FastifyReply, pause: PauseController): void {
  const state = pause.state();
  reply
    .status(429)
    .header("retry-after", String(state.retry_after_seconds))
    .header("x-agl-paused", "true")
    .send({
      error: "gateway paused",
      reason: state.reason,
      retry_after_seconds: state.retry_after_seconds,
      detail: `Gateway paused${state.reason ? ` (${state.reason})` : ""}; retry after ${state.retry_after_seconds} s`,
      code: "paused",
    });
}

/**
 * The rollout must exist and not be terminal, and `aid` must not be a superseded attempt: the current one (a
 * `queuing` rollout's too: AGL's controllers start agents before they patch `running`) or, as in AGL, an id never
 * current. For an id other than the current one, an empty append runs the store's attempt check.
 */
async function checkAttempt(ctx: ProxyContext, rolloutId: string, attemptId: string): Promise<void> {
  const rollout = await ctx.lookups.rollout(rolloutId);
  if (!rollout) throw new RolloutNotFound(rolloutId);
  if (isTerminal(rollout.state)) throw new RolloutFinished(rolloutId, rollout.state);
  if (attemptId !== currentAttemptOf({ last_attempt_id: rollout.lastAttemptId })) {
    await ctx.store.appendEvents(rolloutId, attemptId, []);
  }
}

const UPSTREAM_PATHS: Record<ProxyEndpointKind, string> = { chat: "/chat/completions", completions: "/completions" };

/**
 * Sends one call upstream and answers the agent on `reply`; a success reaches the agent only once its event is
 * committed.
 * @throws {NoEndpoint} no endpoint is registered for the model (nothing recorded)
 * @throws {UpstreamFailed} no answer after every try (recorded as an error event; 502)
 * @throws {UpstreamTimeout} the upstream timed out (recorded; 504)
 * @throws {StoreUnavailable} the answer's event could not be committed (503 + `Retry-After` instead of the answer)
 */
export async function forwardCall(ctx: ProxyContext, call: ProxyCall, reply: FastifyReply): Promise<void> {
  const startedAt = performance.now();
  const ids = upstreamRequestIds();
  // A body without `request_id` stays without: vLLM takes the x-request-id header first, which every try carries.
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
    const tracked: TrackedCall = Object.assign(call, { requestIds, signal });
    if (!answer.ok) {
      const { endpoint, retryCount } = answer;
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
      // The agent gets the upstream's failure either way; recordCall logs a failed record.
      await recordCall(ctx.store, tracked, failed, { request, requestText }).catch(() => undefined);
      if (signal.reason instanceof DrainDeadline) await recordAbort(ctx.store, tracked, signal.reason, latencyMs);
      throw answer.error;
    }
    if (answer.stream) await relayStream(ctx, tracked, answer, reply, base);
    else await relayBody(ctx, tracked, answer, reply, base);
    if (signal.reason instanceof DrainDeadline) {
      await recordAbort(ctx.store, tracked, signal.reason, performance.now() - startedAt);
    }
  } finally {
    running.end();
  }
}

/** Passes the upstream's `Retry-After` on with a final 429 or 503. */
function withRetryAfter(reply: FastifyReply, answer: UpstreamAnswer): FastifyReply {
  const passOn = answer.retryAfter !== undefined && (answer.statusCode === 429 || answer.statusCode === 503);
  return passOn ? reply.header("retry-after", answer.retryAfter!) : reply;
}

/**
 * A whole (non-stream, or non-2xx) answer: recorded, then sent to the agent byte for byte with its status, unless
 * {@link substituteAnswer} replaces it.
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
  body: { detail: string; code: string };
  error: { message: string; code: string; upstream_body?: string };
}

/**
 * The answer that replaces an unusable upstream one, or undefined when the upstream's goes to the agent as it is:
 * a 2xx whose body is not a JSON object becomes 502 `upstream_bad_answer`; an error status with a blank body keeps
 * its status with `upstream_empty_body`. The detail names the model, never the endpoint (docs/security.md).
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
