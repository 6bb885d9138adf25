/** @module The options every gateway route plugin receives from `buildApp`. */
import type { Store } from "../store/store.js";
import type { GatewayConfig } from "./config.js";

/** What a route plugin may use: the store and the frozen gateway configuration. */
export interface GatewayRouteOptions {
  store: Store;
  config: Readonly<GatewayConfig>;
}
