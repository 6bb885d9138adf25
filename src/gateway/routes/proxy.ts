/**
 * @module Route plugin of the capturing LLM proxy (Agent Lightning v1.0 paths) and its pause / resume / state routes.
 * Agents use `{gateway}/proxy/rollout/{rid}/attempt/{aid}/mode/{train|val}/openai/v1` as their OpenAI base URL and
 * the gateway key as their API key.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { openaiClientErrorHandler, pathForDetail } from "../../http/error-handler.js";
import { NotFound, parseOrThrow, RolloutNotFound } from "../../protocol/index.js";
import type { Store } from "../../store/store.js";
import { installJsonParser, type JsonBodyText } from "../json-body.js";
import {
  CALL_ENDPOINTS,
  type CallEndpoint,
  type CallParams,
  checkMode,
  PROXY_ROUTE_PREFIX,
  type ProxyService,
} from "../proxy/serve-call.js";

/** Options of {@link proxyRoutes}. */
export interface ProxyRoutesOptions {
  /** The model-call handler; the plugin closes it on the app's `onClose`. */
  service: ProxyService;
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
    .default(null)
    .describe(
      "The pause ends by itself this many seconds from now unless renewed by another pause call, so an owner that " +
        "died cannot leave agents locked out; null or absent (Agent Lightning v1.0's pause): until resumed",
    ),
});

const PREFIX = PROXY_ROUTE_PREFIX;

/**
 * The proxy routes: `POST {PREFIX}/openai/v1/chat/completions` and `…/completions`, `POST …/responses` (OpenAI
 * Responses API) and `POST {PREFIX}/anthropic/v1/messages` (Anthropic Messages API), both translated to chat
 * completions upstream, each served by {@link ProxyService.serve}; `GET …/models` (OpenAI's model list: the
 * configured model name, else every registered model); `POST /proxy/pause`, `POST /proxy/resume` and
 * `GET /proxy/state` (a pause may carry a lease, `lease_seconds`; without one it lasts until resumed). Register it in
 * the app with the error handler and auth hook set on the parent; the plugin closes the service on `onClose`.
 * @throws {NotFound} unknown mode or path (404), and what {@link ProxyService.serve} throws
 */
export const proxyRoutes: FastifyPluginAsync<ProxyRoutesOptions> = async (app, { service }) => {
  // Agents call these routes through OpenAI clients, which read an error's message only from OpenAI's `error` object.
  app.setErrorHandler(openaiClientErrorHandler);
  app.addHook("onClose", async () => service.close());
  const { store, options } = service.ctx;

  const handle =
    (endpoint: CallEndpoint) =>
    async (request: FastifyRequest<{ Params: CallParams }>, reply: FastifyReply): Promise<FastifyReply> => {
      const body = request.body as JsonBodyText | undefined;
      await service.serve(
        { endpoint, params: request.params, body, headers: request.headers, log: request.log },
        reply,
      );
      return reply;
    };

  // Listing models is not a model call: no pause gate, no attempt check (an agent may list before its first call).
  const startedSeconds = Math.floor(Date.now() / 1000);
  app.get<{ Params: CallParams }>(`${PREFIX}/openai/v1/models`, async (request) => {
    const { rid, mode } = request.params;
    checkMode(mode);
    if (!(await store.getRollout(rid))) throw new RolloutNotFound(rid);
    return listProxyModels(store, options.modelName, startedSeconds);
  });

  const routeOptions = { bodyLimit: options.bodyLimitBytes };
  // Model calls keep their body's text: the upstream gets the agent's bytes with only the proxy's fields changed.
  await app.register(async (calls) => {
    installJsonParser(calls, true);
    for (const endpoint of Object.keys(CALL_ENDPOINTS) as CallEndpoint[]) {
      calls.post(`${PREFIX}/${endpoint}`, routeOptions, handle(endpoint));
    }
  });
  app.all<{ Params: CallParams & { "*": string } }>(`${PREFIX}/*`, async (request) => {
    const hint = wrongBaseHint(request.params);
    throw new NotFound(`No proxy route ${request.method} ${pathForDetail(request.url)}${hint}`);
  });

  registerPauseRoutes(app, service.pause);
};

/**
 * The hint for a client given the other API's base URL. The Anthropic SDK appends `/v1/messages` to its base, so the
 * OpenAI base `…/openai/v1` becomes `…/openai/v1/v1/messages`; the OpenAI SDK appends `/chat/completions` (or
 * `/responses`, `/completions`, `/models`), so the Anthropic base `…/anthropic` becomes `…/anthropic/chat/completions`.
 * Neither path has a route.
 * @param params - the unmatched proxy path's parameters; `*` is the part after `mode/{mode}/`
 * @returns `": …"` naming the right base URL for such a path, else `""`
 */
function wrongBaseHint(params: CallParams & { "*": string }): string {
  const base = `/proxy/rollout/${params.rid}/attempt/${params.aid}/mode/${params.mode}`;
  if (/^openai\/(?:.*\/)?messages\/?$/.test(params["*"])) {
    return (
      `: the Anthropic Messages API is served under ${pathForDetail(`${base}/anthropic`)}, not under the OpenAI ` +
      "base …/openai/v1: give the Anthropic client that base URL (ANTHROPIC_BASE_URL; the SDK appends /v1/messages)"
    );
  }
  if (/^anthropic\/(?:v1\/)?(?:chat\/completions|completions|responses|models)\/?$/.test(params["*"])) {
    return (
      `: the OpenAI APIs are served under ${pathForDetail(`${base}/openai/v1`)}, not under the Anthropic base ` +
      "…/anthropic: give the OpenAI client that base URL (AGL_OPENAI_BASE_URL)"
    );
  }
  return "";
}

/** `POST /proxy/pause`, `POST /proxy/resume` and `GET /proxy/state`, each answering the cluster's pause state. */
function registerPauseRoutes(app: FastifyInstance, pause: ProxyService["pause"]): void {
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

/**
 * OpenAI's model list for `GET …/openai/v1/models` (some agent frameworks list models at start-up): the configured
 * model name alone when set (every call goes upstream under it), else every model with a registered endpoint.
 * @see https://platform.openai.com/docs/api-reference/models/list
 */
async function listProxyModels(store: Store, modelName: string, createdSeconds: number) {
  const names = modelName !== "" ? [modelName] : [...new Set((await store.listModels()).map((m) => m.model))];
  return {
    object: "list",
    data: names.map((id) => ({ id, object: "model", created: createdSeconds, owned_by: "arclight" })),
  };
}
