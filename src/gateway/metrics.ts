/**
 * @module The gateway's Prometheus metrics on a per-app prom-client `Registry` (never the global default registry,
 * so several apps in one process do not clash): requests by route and status, latency, rollouts by state, events,
 * OTLP spans, late events and stale-attempt writes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { StaleAttempt } from "../protocol/index.js";
import type { Store } from "../store/store.js";

/** The metric handles one gateway app updates. */
export interface GatewayMetrics {
  /** Registry the `/metrics` route renders. */
  registry: Registry;
  /** `arclight_http_requests_total{method, route, status}`. */
  requests: Counter<"method" | "route" | "status">;
  /** `arclight_http_request_duration_seconds{method, route}`. */
  latency: Histogram<"method" | "route">;
  /** `arclight_otlp_spans_total{result, reason}`: spans received on `/v1/traces`, stored or rejected (and why). */
  otlpSpans: Counter<"result" | "reason">;
  /** `arclight_late_events_total`: events stored after their rollout finished. */
  lateEvents: Counter;
  /** `arclight_stale_attempt_writes_total{route}`: writes refused because they named a superseded attempt. */
  staleWrites: Counter<"route">;
}

/** Latency buckets in seconds: 0.5 ms … 10 s (API calls are fast; proxied model calls are slow). */
const LATENCY_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Creates the registry and metrics of one app. The rollout and event gauges read the store when scraped.
 * @param store - the store whose `countByState` and `countEvents` feed the gauges
 */
export function createGatewayMetrics(store: Store): GatewayMetrics {
  const registry = new Registry();
  const requests = new Counter({
    name: "arclight_http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status code",
    labelNames: ["method", "route", "status"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "arclight_http_request_duration_seconds",
    help: "Time from request received to response sent, in seconds",
    labelNames: ["method", "route"] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [registry],
  });
  const otlpSpans = new Counter({
    name: "arclight_otlp_spans_total",
    help: "OTLP spans received: result accepted or rejected; reason unattributed, rollout_not_found, stale_attempt or refused",
    labelNames: ["result", "reason"] as const,
    registers: [registry],
  });
  const lateEvents = new Counter({
    name: "arclight_late_events_total",
    help: "Events stored with late=true: they arrived after their rollout finished (a replayed post counts again)",
    registers: [registry],
  });
  const staleWrites = new Counter({
    name: "arclight_stale_attempt_writes_total",
    help: "Writes (events, patches, model calls) refused with 409 stale_attempt: they named a superseded attempt",
    labelNames: ["route"] as const,
    registers: [registry],
  });
  new Gauge({
    name: "arclight_rollouts",
    help: "Rollouts in the store, by state",
    labelNames: ["state"] as const,
    registers: [registry],
    async collect() {
      const counts = await store.countByState();
      for (const [state, count] of Object.entries(counts)) this.set({ state }, count);
    },
  });
  new Gauge({
    name: "arclight_events_stored",
    help: "Events in the store (every rollout, every attempt)",
    registers: [registry],
    async collect() {
      this.set(await store.countEvents());
    },
  });
  return { registry, requests, latency, otlpSpans, lateEvents, staleWrites };
}

/**
 * Counts every answered request, and every write refused as a stale attempt (by route). Unmatched paths are labelled `unmatched` so unknown URLs cannot grow the label set.
 * Requests Fastify refuses before routing skip these hooks; `framework-errors.ts` counts those.
 * @param app - the root app (the hook then sees every route, plugins included)
 */
export function installMetricsHooks(app: FastifyInstance, metrics: GatewayMetrics): void {
  app.addHook("onError", async (request, _reply, error) => {
    countStaleWrite(metrics, error, request.routeOptions.url ?? "unmatched");
  });
  // Callback style, not async: every request passes here, and an async hook costs a promise each.
  app.addHook("onResponse", (request, reply, done) => {
    countAnswer(metrics, request, reply);
    done();
  });
}

/**
 * Counts one sent answer in `arclight_http_requests_total` and its `reply.elapsedTime` in the latency histogram,
 * under its route pattern, or `unmatched` for a request no route took.
 * @param metrics - the app's metrics
 * @param request - the answered request
 * @param reply - its reply, already sent
 */
export function countAnswer(metrics: GatewayMetrics, request: FastifyRequest, reply: FastifyReply): void {
  const { method } = request;
  const route = request.routeOptions.url ?? "unmatched";
  metrics.requests.inc({ method, route, status: String(reply.statusCode) });
  metrics.latency.observe({ method, route }, reply.elapsedTime / 1000);
}

/**
 * Counts a write refused as a stale attempt in `arclight_stale_attempt_writes_total`; any other error is not counted.
 * @param metrics - the app's metrics
 * @param error - what the request failed with
 * @param route - the request's route pattern
 */
function countStaleWrite(metrics: GatewayMetrics, error: unknown, route: string): void {
  if (error instanceof StaleAttempt) metrics.staleWrites.inc({ route });
}
