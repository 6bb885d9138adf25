/**
 * @module Route plugin of the capturing LLM proxy (Agent Lightning v1.0 paths) and its pause / resume / state routes.
 * Agents use `{gateway}/proxy/rollout/{rid}/attempt/{aid}/mode/{train|val}/openai/v1` as their OpenAI base URL and
 * the gateway key as their API key.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { openaiClientErrorHandler, pathForDetail } from "../../http/error-handler.js";
import {
  BadRequest,
  currentAttemptOf,
  isTerminal,
  NotFound,
  parseOrThrow,
  RolloutFinished,
  RolloutNotFound,
} from "../../protocol/index.js";
import type { Store } from "../../store/store.js";
import { installJsonParser, type JsonBodyText } from "../json-body.js";
import { callIdentity } from "../proxy/agent-identity.js";
import { agentRouter } from "../proxy/agent-route.js";
import type { ProxyEndpointKind } from "../proxy/capture.js";
import { EndpointPicker } from "../proxy/endpoint-picker.js";
import { forwardCall, type ProxyContext } from "../proxy/forward.js";
import { InflightCalls, watchDrain } from "../proxy/inflight-calls.js";
import { ProxyLookups } from "../proxy/lookups.js";
import { listProxyModels } from "../proxy/model-list.js";
import type { ProxyOptions } from "../proxy/options.js";
import type { PauseController } from "../proxy/pause.js";
import { agentRequestId } from "../proxy/request-ids.js";
import type { ProxyMode } from "../proxy/rewrite.js";
import { TokenizerFolders } from "../proxy/tito/tokenizer-folder.js";
import { translateAnthropicCall } from "../proxy/translate/anthropic-call.js";
import { ResponseHistory } from "../proxy/translate/response-history.js";
import { translateResponsesCall } from "../proxy/translate/responses-call.js";
import type { TranslatedCall } from "../proxy/translate/translation.js";
import { UpstreamClient } from "../proxy/upstream.js";

/** Options of {@link proxyRoutes}. */
export interface ProxyRoutesOptions {
  store: Store;
  options: ProxyOptions;
  /** Shared with whoever pauses the gateway around a weight update (the trainer, over HTTP). */
  pause: PauseController;
}

/** Body of `POST /proxy/pause`. */
export const PauseRequestSchema = z.strictObject({
  retry_after_seconds: z.number().int().min(0).max(86_400).default(5).describe("Retry-After sent to agents, seconds"),
  reason: z.string().max(1000).nullable().default(null),
  lease_seconds: z
    .number()
    .gt(0)
    .max(86_400)
    .nullable()
    .default(300)
    .describe(
      "The pause ends by itself this many seconds from now unless renewed by another pause call, so an owner that " +
        "died cannot leave agents locked out; null: until resumed",
    ),
});

interface ProxyParams {
  rid: string;
  aid: string;
  mode: string;
}

const PREFIX = "/proxy/rollout/:rid/attempt/:aid/mode/:mode";
const MODES = new Set<string>(["train", "val"]);

/** 429 for a paused gateway: AGL's body (`error`, `reason`) plus `detail`, and AGL's headers. */
function sendPaused(reply: FastifyReply, pause: PauseController): FastifyReply {
  const state = pause.state();
  return reply
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

/** What every call of the plugin shares: store, lookups, upstream pool, tokenizers, agent routes, calls in flight. */
function proxyContext(store: ProxyRoutesOptions["store"], options: ProxyRoutesOptions["options"]): ProxyContext {
  const picker = new EndpointPicker(options.endpointCooldownBaseMs, options.endpointCooldownMaxMs);
  return {
    store,
    lookups: new ProxyLookups(store),
    options,
    upstream: new UpstreamClient(options, picker),
    tokenizers: new TokenizerFolders(),
    routeAgent: agentRouter(options.agentRoutes),
    inflight: new InflightCalls(),
  };
}

/**
 * The proxy routes: `POST {PREFIX}/openai/v1/chat/completions` and `…/completions`, `POST …/responses` (OpenAI
 * Responses API) and `POST {PREFIX}/anthropic/v1/messages` (Anthropic Messages API), both translated to chat
 * completions upstream, `GET …/models` (OpenAI's model
 * list: the configured model name, else every registered model), plus `POST /proxy/pause`,
 * `POST /proxy/resume` and `GET /proxy/state` (a pause carries a lease, `lease_seconds`, default 300 s). Register it in the app with the error handler and auth hook set on
 * the parent; the plugin closes its upstream pool on `onClose`.
 * @throws {NotFound} unknown mode or path (404); {@link RolloutNotFound} (404); `StaleAttempt` superseded attempt (409);
 *   {@link RolloutFinished} the rollout is terminal (409);
 *   {@link BadRequest} body not a JSON object (400); `NoEndpoint` (503); `UpstreamFailed` (502); `UpstreamTimeout` (504)
 */
export const proxyRoutes: FastifyPluginAsync<ProxyRoutesOptions> = async (app, { store, options, pause }) => {
  // Agents call these routes through OpenAI clients, which read an error's message only from OpenAI's `error` object.
  app.setErrorHandler(openaiClientErrorHandler);
  pause.onLeaseExpired((reason) => app.log.warn({ reason }, "proxy pause lease expired; proxy resumed"));
  const ctx = proxyContext(store, options);
  closeWithApp(app, ctx, pause);

  const history = new ResponseHistory();
  /** A translated API (Responses, Anthropic Messages): the chat path with the answer translated back. */
  type Translate = (body: Record<string, unknown>, rolloutId: string) => TranslatedCall;

  const handle =
    (kind: ProxyEndpointKind, translate?: Translate) =>
    async (request: FastifyRequest<{ Params: ProxyParams }>, reply: FastifyReply): Promise<FastifyReply> => {
      const { rid, aid, mode } = request.params;
      if (!MODES.has(mode)) throw new NotFound(`Unknown proxy mode ${mode} (expected train or val)`);
      const release = pause.tryEnter();
      if (release === null) return sendPaused(reply, pause);
      try {
        ctx.lookups.refresh();
        await checkAttempt(ctx, rid, aid);
        const body = request.body as JsonBodyText | undefined;
        const value = body?.value;
        if (typeof value !== "object" || value === null || Array.isArray(value)) {
          throw new BadRequest("Request body must be a JSON object");
        }
        const agentBody = value as Record<string, unknown>;
        const translated = translate?.(agentBody, rid);
        const call = {
          kind,
          rolloutId: rid,
          attemptId: aid,
          mode: mode as ProxyMode,
          // A translated call's chat body is new: its text is serialised; an agent's own body keeps its bytes.
          body: translated
            ? { text: JSON.stringify(translated.chat), value: translated.chat }
            : { text: body!.text, value: agentBody },
          log: request.log,
          translation: translated?.translation,
          identity: callIdentity(request.headers, agentBody.model, options.agentModels),
          agentRequestId: agentRequestId(agentBody, request.headers),
        };
        await forwardCall(ctx, call, reply);
        return reply;
      } finally {
        release();
      }
    };

  // Listing models is not a model call: no pause gate, no attempt check (an agent may list before its first call).
  const startedSeconds = Math.floor(Date.now() / 1000);
  app.get<{ Params: ProxyParams }>(`${PREFIX}/openai/v1/models`, async (request) => {
    const { rid, mode } = request.params;
    if (!MODES.has(mode)) throw new NotFound(`Unknown proxy mode ${mode} (expected train or val)`);
    if (!(await store.getRollout(rid))) throw new RolloutNotFound(rid);
    return listProxyModels(store, options.modelName, startedSeconds);
  });

  const routeOptions = { bodyLimit: options.bodyLimitBytes };
  // Model calls keep their body's text: the upstream gets the agent's bytes with only the proxy's fields changed.
  await app.register(async (calls) => {
    installJsonParser(calls, true);
    calls.post(`${PREFIX}/openai/v1/chat/completions`, routeOptions, handle("chat"));
    calls.post(`${PREFIX}/openai/v1/completions`, routeOptions, handle("completions"));
    const responses: Translate = (body, rolloutId) => translateResponsesCall(body, rolloutId, history);
    calls.post(`${PREFIX}/openai/v1/responses`, routeOptions, handle("chat", responses));
    calls.post(`${PREFIX}/anthropic/v1/messages`, routeOptions, handle("chat", translateAnthropicCall));
  });
  app.all(`${PREFIX}/*`, async (request) => {
    throw new NotFound(`No proxy route ${request.method} ${pathForDetail(request.url)}`);
  });

  registerPauseRoutes(app, pause);
};

/** Starts the drain watchdog (see `inflight-calls.ts`); the app's close stops it and closes the upstream pool. */
function closeWithApp(app: FastifyInstance, ctx: ProxyContext, pause: PauseController): void {
  const { drainTimeoutMs } = ctx.options;
  const stopDrainWatch = watchDrain(ctx.inflight, pause, drainTimeoutMs, (count) =>
    app.log.warn({ count, drainTimeoutMs }, "proxy paused; aborted calls past the drain deadline"),
  );
  app.addHook("onClose", async () => {
    stopDrainWatch();
    await ctx.upstream.close();
  });
}

/** `POST /proxy/pause`, `POST /proxy/resume` and `GET /proxy/state`, each answering the cluster's pause state. */
function registerPauseRoutes(app: FastifyInstance, pause: ProxyRoutesOptions["pause"]): void {
  app.post("/proxy/pause", async (request) => {
    const body = parseOrThrow(PauseRequestSchema, request.body ?? {}, "pause request", ["body"]);
    await pause.setPaused({ paused: true, ...body });
    request.log.info(
      { retryAfterSeconds: body.retry_after_seconds, reason: body.reason, leaseSeconds: body.lease_seconds },
      "proxy paused",
    );
    return pause.clusterState();
  });
  app.post("/proxy/resume", async (request) => {
    await pause.setPaused({ paused: false, retry_after_seconds: 0, reason: null });
    request.log.info("proxy resumed");
    return pause.clusterState();
  });
  app.get("/proxy/state", async () => pause.clusterState());
}
