/** @module The options every gateway route plugin receives from `buildApp`. */
import type { Store } from "../store/store.js";
import type { GatewayConfig } from "./config.js";
import type { GatewayMetrics } from "./metrics.js";

/** What a route plugin may use: the store, the frozen gateway configuration and the app's metrics. */
export interface GatewayRouteOptions {
  store: Store;
  config: Readonly<GatewayConfig>;
  metrics: GatewayMetrics;
}
