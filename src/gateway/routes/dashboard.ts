/**
 * @module The browser dashboard as one plugin: its pages and login (`ui.ts`), training runs (`runs.ts`), the rollout
 * table (`dashboard-rollouts.ts`), the live feed (`dashboard-stream.ts`) and token texts (`dashboard-detokenize.ts`).
 * `buildApp` mounts it unless `dashboard: false`. Rollout details come from the ordinary rollout and event routes.
 */
import type { FastifyPluginAsync } from "fastify";
import { Detokenizer } from "../dashboard/detokenizer.js";
import { RolloutIndex } from "../dashboard/rollout-index.js";
import { RunRegistry } from "../dashboard/run-registry.js";
import { loadRunsDir } from "../dashboard/runs-dir.js";
import type { DashboardSessions } from "../dashboard/sessions.js";
import { loadUiAssets } from "../dashboard/ui-assets.js";
import type { GatewayRouteOptions } from "../route-options.js";
import { dashboardDetokenizeRoutes } from "./dashboard-detokenize.js";
import { dashboardRolloutRoutes } from "./dashboard-rollouts.js";
import { dashboardStreamRoutes } from "./dashboard-stream.js";
import { runRoutes } from "./runs.js";
import { uiRoutes } from "./ui.js";

/** Options of {@link dashboardRoutes}. */
export interface DashboardRouteOptions extends GatewayRouteOptions {
  sessions: DashboardSessions;
  /** Folder of the built UI; default `dist/ui` of this package. */
  uiDir?: string;
}

/** Mounts every dashboard route. */
export const dashboardRoutes: FastifyPluginAsync<DashboardRouteOptions> = async (app, options) => {
  const { store, sessions } = options;
  const registry = new RunRegistry();
  if (options.config.runs_dir !== "") {
    const loaded = loadRunsDir(registry, options.config.runs_dir);
    app.log.info({ runsDir: options.config.runs_dir, ...loaded }, "finished runs loaded for the dashboard");
  }
  const assets = loadUiAssets(options.uiDir);
  if (assets.size === 0) app.log.warn("dashboard assets not found (dist/ui); /ui answers 404 until `npm run build`");
  await app.register(uiRoutes, { sessions, assets });
  await app.register(runRoutes, { registry });
  await app.register(dashboardRolloutRoutes, { index: new RolloutIndex(store) });
  await app.register(dashboardStreamRoutes, { store, registry });
  await app.register(dashboardDetokenizeRoutes, { detokenizer: new Detokenizer(store) });
};
