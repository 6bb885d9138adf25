/** @module Public entry of the `arclight` package: protocol types and the store. */
export * from "./protocol/index.js";
export { MemoryStore } from "./store/memory.js";
export type { EventQuery, RolloutQuery, Store } from "./store/store.js";
