/**
 * @module Builds the gateway's Fastify app (not listening): error handler, auth, request ids and logging, body limit,
 * JSON parsing, 404s, metrics, then one plugin per resource. A plugin taking {@link GatewayRouteOptions} goes in
 * `ROUTE_PLUGINS`; one with its own options gets one `app.register` line at the end of {@link buildApp} (the LLM proxy,
 * the OTLP receiver).
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from "fastify";
import { pino } from "pino";
import { errorHandler, pathForDetail } from "../http/error-handler.js";
import { answerHalfClosedRequests } from "../http/half-close.js";
import { serverTimeoutOptions } from "../http/server-timeouts.js";
import { NotFound } from "../protocol/index.js";
import type { SharedPause } from "../store/shared-pause.js";
import type { Store } from "../store/store.js";
import type { DashboardAuth } from "./auth.js";
import { type GatewayConfig, proxyOptionsOf } from "./config.js";
import { DashboardSessions } from "./dashboard/sessions.js";
import { frameworkErrorHandler } from "./framework-errors.js";
import { installJsonParser } from "./json-body.js";
import { createGatewayMetrics, installMetricsHooks } from "./metrics.js";
import { clientErrorHandler } from "./parser-errors.js";
import { agentPathRewrite } from "./proxy/call-request.js";
import { PauseController } from "./proxy/pause.js";
import { ProxyService } from "./proxy/serve-call.js";
import { requestGate } from "./request-gate.js";
import { GatewayLogController, requestForLog, requestId } from "./request-log.js";
import { RolloutLeases, watchLeases } from "./rollout-leases.js";
import type { GatewayRouteOptions } from "./route-options.js";
import { dashboardRoutes } from "./routes/dashboard.js";
import { eventRoutes } from "./routes/events.js";
import { healthRoutes } from "./routes/health.js";
import { leaseRoutes } from "./routes/leases.js";
import { metricsRoutes } from "./routes/metrics.js";
import { modelRoutes } from "./routes/models.js";
import { otlpRoutes } from "./routes/otlp.js";
import { proxyRoutes } from "./routes/proxy.js";
import { resourceRoutes } from "./routes/resources.js";
import { rolloutRoutes } from "./routes/rollouts.js";

/** Route plugins mounted on every app, each receiving {@link GatewayRouteOptions}. */
const ROUTE_PLUGINS: readonly FastifyPluginAsync<GatewayRouteOptions>[] = [
  healthRoutes,
  rolloutRoutes,
  eventRoutes,
  modelRoutes,
  resourceRoutes,
];

/** Dependencies of {@link buildApp}. */
export interface BuildAppOptions {
  store: Store;
  config: Readonly<GatewayConfig>;
  /**
   * The proxy pause shared with other gateways on the same database (PostgreSQL); absent: this gateway's pause is its
   * own. The caller closes it (closing the store does).
   */
  sharedPause?: SharedPause;
  /** Root logger; the app logs through `logger.child({ component: "gateway" })`. Silent when absent. */
  logger?: FastifyBaseLogger;
  /** Folder of the built dashboard; default this package's `dist/ui`. */
  uiDir?: string;
}

/** Rollout id named by a request path: `/api/rollouts/{id}[/...]` (not `/terminal`) or `/proxy/rollout/{rid}/...`. */
export function rolloutIdFromUrl(url: string): string | undefined {
  const match = /^\/(api\/rollouts|proxy\/rollout)\/([^/?#]+)/.exec(url);
  if (!match?.[2] || (match[1] === "api/rollouts" && match[2] === "terminal")) return undefined;
  try {
    return decodeURIComponent(match[2]);
  } catch {
    return match[2];
  }
}

/**
 * Per-request loggers bind `reqId` and, on routes that name a rollout, `rolloutId`. Done in the child logger
 * factory so each request makes one pino child, not two.
 */
function bindRolloutId(app: FastifyInstance): void {
  app.setChildLoggerFactory((logger, bindings, options, rawRequest) => {
    const rolloutId = rolloutIdFromUrl(rawRequest.url ?? "");
    return logger.child(rolloutId === undefined ? bindings : Object.assign({}, bindings, { rolloutId }), options);
  });
}

/**
 * Once `close()` has begun, answers carry `Connection: close`, so a keep-alive client whose request was in flight
 * does not hold the server open after its answer (Node only closes connections that are idle when close starts).
 */
function closeConnectionsWhenClosing(app: FastifyInstance): void {
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) reply.header("connection", "close");
    done(null, payload);
  });
}

/**
 * Longest path parameter the router accepts, in characters as sent (percent-encoding included): room for the
 * protocol's 200-character ids and names, while still bounding what the router scans.
 */
export const MAX_PATH_PARAM_LENGTH = 1000;

/** Auth's view of the dashboard: pages, assets and login are public; a session cookie may read. */
function dashboardAuth(sessions: DashboardSessions): DashboardAuth {
  return {
    isPublic: (method, path) =>
      method === "GET" || method === "HEAD"
        ? path === "/ui" || path.startsWith("/ui/")
        : method === "POST" && (path === "/ui/login" || path === "/ui/logout"),
    hasSession: (cookieHeader) => sessions.isValid(cookieHeader),
    isReadingPost: (path) => path === "/api/dashboard/detokenize",
  };
}

/**
 * Builds the gateway app with every route mounted; call `listen` (or `inject`) on it.
 * @param options - the store (the caller opens and closes it), the frozen config, and a root logger
 * @returns a Fastify instance, not yet listening
 */
export function buildApp(options: BuildAppOptions): FastifyInstance {
  const { store, config } = options;
  const logger = (options.logger ?? pino({ level: "silent" })).child(
    { component: "gateway" },
    { serializers: { req: requestForLog } },
  );
  const metrics = createGatewayMetrics(store);
  const logController = new GatewayLogController();
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: config.body_limit_bytes,
    genReqId: (req) => requestId(req.headers["x-request-id"]),
    return503OnClosing: true,
    clientErrorHandler: clientErrorHandler(logger),
    rewriteUrl: agentPathRewrite,
    logController,
    // Rollout ids, run and resource names may be 200 characters (protocol/rollout.ts); the router's default (100)
    // answered 414 for such a rollout's every path.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: frameworkErrorHandler(logController, metrics),
    ...serverTimeoutOptions(config.headers_timeout_seconds, config.request_timeout_seconds),
  });
  answerHalfClosedRequests(app.server);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(async (request) => {
    throw new NotFound(`Route ${request.method} ${pathForDetail(request.url)} not found`);
  });
  installJsonParser(app);
  const sessions = new DashboardSessions({ gatewayKey: config.key, dashboardKey: config.dashboard_key });
  app.addHook("onRequest", requestGate(config.key, config.dashboard ? dashboardAuth(sessions) : undefined));
  bindRolloutId(app);
  closeConnectionsWhenClosing(app);
  installMetricsHooks(app, metrics);
  for (const plugin of ROUTE_PLUGINS) void app.register(plugin, { store, config, metrics });
  void app.register(metricsRoutes, { registry: metrics.registry });
  void app.register(otlpRoutes, { store, bodyLimitBytes: config.body_limit_bytes, metrics });
  const proxy = new ProxyService(store, proxyOptionsOf(config), new PauseController(options.sharedPause), logger);
  void app.register(proxyRoutes, { service: proxy });
  if (config.dashboard) void app.register(dashboardRoutes, { store, config, metrics, sessions, uiDir: options.uiDir });
  const leases = new RolloutLeases();
  void app.register(leaseRoutes, { store, leases });
  const stopLeases = watchLeases(store, leases, logger);
  app.addHook("onClose", async () => stopLeases());
  return app;
}
