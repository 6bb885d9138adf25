/** @module `GET /healthz`: liveness, reachable without a key. */
import type { FastifyPluginAsync } from "fastify";
import type { GatewayRouteOptions } from "../route-options.js";

/** Mounts `GET /healthz` → `{"status":"ok"}` (Agent Lightning v1.0). */
export const healthRoutes: FastifyPluginAsync<GatewayRouteOptions> = async (app) => {
  app.get("/healthz", async () => ({ status: "ok" }));
};
