/**
 * @module `GET /api/dashboard/stream`: the dashboard's live feed as Server-Sent Events. `run` and `steps` events carry
 * run changes as they are posted; a `rollouts` event (the count per state) follows any change of the store's rollouts,
 * checked every `pollMs`. Open streams end when the gateway closes.
 */
import type { FastifyPluginAsync } from "fastify";
import type { Store } from "../../store/store.js";
import type { RunRegistry } from "../dashboard/run-registry.js";
import { SseChannel } from "../dashboard/sse-channel.js";

/** Options of {@link dashboardStreamRoutes}. */
export interface DashboardStreamRouteOptions {
  store: Store;
  registry: RunRegistry;
  /** How often the store's revision is checked, in ms; default 1000. */
  pollMs?: number;
}

/** Interval between keep-alive comments: 15 s. */
const KEEP_ALIVE_MS = 15_000;

/** Mounts `GET /api/dashboard/stream`. */
export const dashboardStreamRoutes: FastifyPluginAsync<DashboardStreamRouteOptions> = async (app, options) => {
  const { store, registry, pollMs = 1000 } = options;
  const open = new Set<SseChannel>();
  app.addHook("preClose", async () => {
    for (const channel of open) channel.close();
  });

  app.get("/api/dashboard/stream", async (_request, reply) => {
    reply.hijack();
    const channel = new SseChannel(reply.raw);
    open.add(channel);
    let revision = store.revision();
    const unsubscribe = registry.subscribe((change) => {
      if (change.kind === "run") channel.send("run", change.run);
      else channel.send("steps", { run: change.run, steps: change.steps });
    });
    const sendCounts = async () => channel.send("rollouts", { counts: await store.countByState() });
    const poll = setInterval(() => {
      if (store.revision() === revision) return;
      revision = store.revision();
      sendCounts().catch(() => channel.close());
    }, pollMs);
    const keepAlive = setInterval(() => channel.keepAlive(), KEEP_ALIVE_MS);
    reply.raw.on("close", () => {
      clearInterval(poll);
      clearInterval(keepAlive);
      unsubscribe();
      open.delete(channel);
    });
    await sendCounts();
  });
};
