/**
 * @module The proxy's model-call handler behind the Fastify routes (`routes/proxy.ts`). Given a call's path parameters, its JSON
 * body and its reply, it checks the pause gate and the attempt, translates the Responses and Anthropic APIs, and
 * forwards the call (`forward.ts`). It owns what every call shares: the upstream pool, lookups, tokenizer folders,
 * the Responses history and the calls in flight.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { FastifyBaseLogger, FastifyReply } from "fastify";
import {
  BadRequest,
  currentAttemptOf,
  isTerminal,
  NotFound,
  RolloutFinished,
  RolloutNotFound,
} from "../../protocol/index.js";
import type { Store } from "../../store/store.js";
import { TokenizerFolders } from "../../wire/tokenizer-folder.js";
import type { JsonBodyText } from "../json-body.js";
import { callIdentity } from "./agent-identity.js";
import { InflightCalls, watchDrain } from "./call-lifetime.js";
import type { ProxyEndpointKind } from "./capture.js";
import { EndpointPicker } from "./endpoint-picker.js";
import { agentRouter, forwardCall } from "./forward.js";
import { ProxyLookups } from "./lookups.js";
import type { ProxyOptions } from "./options.js";
import type { PauseController } from "./pause.js";
import type { ProxyContext } from "./proxy-call.js";
import { agentRequestId } from "./request-ids.js";
import type { ProxyMode } from "./rewrite.js";
import { translateAnthropicCall } from "./translate/anthropic-call.js";
import { ResponseHistory } from "./translate/response-history.js";
import { translateResponsesCall } from "./translate/responses-call.js";
import type { TranslatedCall } from "./translate/translation.js";
import { UpstreamClient } from "./upstream.js";

/**
 * The proxy's model-call endpoints, each a path below `/proxy/rollout/{rid}/attempt/{aid}/mode/{mode}/`, and how each
 * is served: its upstream kind, and whether its API is translated to chat completions.
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

/** The path parameters of a proxy route, as sent (the mode is checked by the handler). */
export interface CallParams {
  rid: string;
  aid: string;
  mode: string;
}

/** One model call as it arrived, whichever way it came in. */
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

/** The proxy modes' check. @throws {NotFound} a mode other than `train` or `val` (404) */
export function checkMode(mode: string): asserts mode is ProxyMode {
  if (!MODES.has(mode)) throw new NotFound(`Unknown proxy mode ${mode} (expected train or val)`);
}

/** The model-call handler and what its calls share; one per gateway app. */
export class ProxyService {
  /** What every call shares (see `proxy-call.ts`). */
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
   * Serves one model call: answers 429 while paused, else checks the attempt and forwards the call; resolves once the
   * answer is complete and its event recorded.
   * @throws {NotFound} unknown mode (404); {@link RolloutNotFound} (404); `StaleAttempt` superseded attempt (409);
   *   {@link RolloutFinished} the rollout is terminal (409); {@link BadRequest} body not a JSON object (400); and
   *   what {@link forwardCall} throws (`NoEndpoint` 503, `UpstreamFailed` 502, `UpstreamTimeout` 504,
   *   `StoreUnavailable` 503)
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
        // A translated call's chat body is new: its text is serialised; an agent's own body keeps its bytes.
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
 * The rollout must exist and not be terminal, and `aid` must not be a superseded attempt: the current attempt (a
 * `queuing` rollout's too: AGL's controllers start agents before they patch `running`) or, as in AGL, an attempt id
 * never current. For an id other than the current one, an empty append runs the store's attempt check.
 */
async function checkAttempt(ctx: ProxyContext, rolloutId: string, attemptId: string): Promise<void> {
  const rollout = await ctx.lookups.rollout(rolloutId);
  if (!rollout) throw new RolloutNotFound(rolloutId);
  if (isTerminal(rollout.state)) throw new RolloutFinished(rolloutId, rollout.state);
  if (attemptId !== currentAttemptOf({ last_attempt_id: rollout.lastAttemptId })) {
    await ctx.store.appendEvents(rolloutId, attemptId, []);
  }
}
