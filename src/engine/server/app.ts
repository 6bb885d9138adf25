/**
 * @module Builds the engine server: a Fastify app serving one `Engine` (with its tokenizer and chat template), and
 * optionally more engines by model name beside it (e.g. a policy per agent, as vLLM serves LoRA adapters by name),
 * through vLLM-compatible routes
 * (`/v1/chat/completions`, `/v1/completions`, `/v1/models`, `/tokenize`, `/detokenize`) and admin routes
 * (`/v1/load_weights`, `/pause`, `/resume`: admin key, checkpoint root). POST bodies are JSON only. Every error, unknown routes included, is JSON `{detail, code}` from the
 * shared error handler.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { pathForDetail } from "../../http/error-handler.js";
import { answerHalfClosedRequests } from "../../http/half-close.js";
import {
  DEFAULT_HEADERS_TIMEOUT_SECONDS,
  DEFAULT_REQUEST_TIMEOUT_SECONDS,
  serverTimeoutOptions,
} from "../../http/server-timeouts.js";
import { NotFound } from "../../protocol/errors.js";
import { reasoningParser } from "../../wire/reasoning.js";
import { toolCallParser } from "../../wire/tool-calls.js";
import type { Engine } from "../engine.js";
import { Admission } from "./admission.js";
import { checkpointRootOf } from "./checkpoint-root.js";
import type { ServerContext } from "./context.js";
import { engineErrorHandler } from "./openai-error.js";
import { makeRequestGuard } from "./request-guard.js";
import { adminRoutes } from "./routes/admin.js";
import { chatRoutes } from "./routes/chat.js";
import { completionRoutes } from "./routes/completions.js";
import { modelRoutes } from "./routes/models.js";
import { tokenizeRoutes } from "./routes/tokenize.js";

/** What the engine server needs. */
export interface EngineServerOptions {
  /** The engine to serve; the server never disposes it. */
  engine: Engine;
  /** Model name in `/v1/models` and in every answer's `model`. */
  modelName: string;
  /**
   * More models served by name beside `modelName`: a request whose `model` names one runs on its engine (answered with
   * that engine's policy version); each shares `engine`'s tokenizer and chat template, and the server never disposes
   * it. `/v1/load_weights` swaps `engine` only. Names are unique and differ from `modelName`. Default none.
   */
  adapters?: readonly { modelName: string; engine: Engine }[];
  /** Root logger (the server logs as `component: "engine-server"`); omitted: no logging. */
  log?: Logger;
  /** Largest request body (bytes); default 8 MiB. */
  bodyLimitBytes?: number;
  /** Admin key for `/v1/load_weights`, `/pause`, `/resume` (Bearer or `x-api-key`); empty or absent: open. */
  key?: string;
  /** The only directory tree `/v1/load_weights` may read (symlinks resolved); absent: load_weights answers 403. */
  checkpointRoot?: string;
  /** vLLM `--tool-call-parser` name of the model's tool-call format (default `hermes`). */
  toolCallParser?: string;
  /** vLLM `--reasoning-parser` name; absent: generated text is not split into reasoning and content. */
  reasoningParser?: string;
  /** Seconds a client has to send request headers (default 30) and a whole request (default 300). */
  headersTimeoutSeconds?: number;
  /** Seconds a client has to send a whole request, body included (default 300). */
  requestTimeoutSeconds?: number;
  /**
   * `close()` cuts open connections, in-flight requests included, instead of waiting for them (Fastify's
   * `forceCloseConnections`). For a server whose clients are being stopped with it; default false (graceful).
   */
  forceCloseConnections?: boolean;
}

/**
 * Builds (does not start) the engine server. Concurrent requests reach their engines concurrently, where each engine's
 * continuous batching decodes its requests together.
 * @returns the Fastify app; call `listen` to serve, `close` to stop
 * @throws {RangeError} when an adapter's name repeats another's or the base model's
 */
export async function buildEngineServer(options: EngineServerOptions): Promise<FastifyInstance> {
  const adapters = adapterEngines(options.modelName, options.adapters ?? []);
  const app = Fastify({
    loggerInstance: options.log?.child({ component: "engine-server" }) as FastifyBaseLogger | undefined,
    bodyLimit: options.bodyLimitBytes ?? 8 * 1024 * 1024,
    forceCloseConnections: options.forceCloseConnections ?? false,
    ...serverTimeoutOptions(
      options.headersTimeoutSeconds ?? DEFAULT_HEADERS_TIMEOUT_SECONDS,
      options.requestTimeoutSeconds ?? DEFAULT_REQUEST_TIMEOUT_SECONDS,
    ),
  });
  answerHalfClosedRequests(app.server);
  // JSON only: Fastify's default text/plain parser would let a cross-origin "simple" request through.
  app.removeContentTypeParser("text/plain");
  app.addHook("onRequest", makeRequestGuard(options.key ?? ""));
  const ctx: ServerContext = {
    engine: options.engine,
    tokenizer: options.engine.tokenizer,
    chatTemplate: options.engine.chatTemplate,
    modelName: options.modelName,
    adapters,
    admission: new Admission(),
    startedS: Math.floor(Date.now() / 1000),
    checkpointRoot: checkpointRootOf(options.checkpointRoot),
    toolCallParser: toolCallParser(options.toolCallParser ?? "hermes"),
    reasoningParser: options.reasoningParser === undefined ? undefined : reasoningParser(options.reasoningParser),
  };
  app.setErrorHandler(engineErrorHandler);
  // Unknown routes answer like every other error (OpenAI `error` + `{detail, code}`), not Fastify's own shape.
  app.setNotFoundHandler(async (request) => {
    throw new NotFound(`Route ${request.method} ${pathForDetail(request.url)} not found`);
  });
  app.get("/health", async () => ({ status: "ok" }));
  await app.register(chatRoutes(ctx));
  await app.register(completionRoutes(ctx));
  await app.register(modelRoutes(ctx));
  await app.register(tokenizeRoutes(ctx));
  await app.register(adminRoutes(ctx));
  return app;
}

/**
 * The adapters by model name, in the given order.
 * @throws {RangeError} for a name given twice or equal to the base model's
 */
function adapterEngines(
  baseName: string,
  adapters: NonNullable<EngineServerOptions["adapters"]>,
): ReadonlyMap<string, Engine> {
  const byName = new Map<string, Engine>();
  for (const { modelName, engine } of adapters) {
    if (modelName === baseName) throw new RangeError(`adapter model name ${modelName} is the base model's name`);
    if (byName.has(modelName)) throw new RangeError(`adapter model name ${modelName} is given twice`);
    byName.set(modelName, engine);
  }
  return byName;
}
