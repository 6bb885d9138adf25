/**
 * @module `GET /healthz` (the gateway and its store answer: readiness) and `GET /livez` (the process answers:
 * liveness, so an orchestrator does not restart a gateway whose database is down); both reachable without a key.
 */
import type { FastifyPluginAsync } from "fastify";
import type { GatewayRouteOptions } from "../route-options.js";

/**
 * Mounts `GET /healthz` → `{"status":"ok"}` (Agent Lightning v1.0) once the store answers a trivial query; while the
 * database is down, 503 `store_unavailable` with `Retry-After` (a gateway that cannot store anything is not healthy).
 */
export const healthRoutes: FastifyPluginAsync<GatewayRouteOptions> = async (app, { store }) => {
  app.get("/healthz", async () => {
    await store.ping();
    return { status: "ok" };
  });
  app.get("/livez", async () => ({ status: "ok" }));
};
