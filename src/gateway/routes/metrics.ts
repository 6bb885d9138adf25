/** @module `GET /metrics`: the app's Prometheus registry in text exposition format. Needs the key like every route. */
import type { FastifyPluginAsync } from "fastify";
import type { Registry } from "prom-client";

/** Options of {@link metricsRoutes}. */
export interface MetricsRouteOptions {
  /** The per-app registry built by `createGatewayMetrics`. */
  registry: Registry;
}

/** Mounts `GET /metrics`. */
export const metricsRoutes: FastifyPluginAsync<MetricsRouteOptions> = async (app, { registry }) => {
  app.get("/metrics", async (_request, reply) => {
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
};
