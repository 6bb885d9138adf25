/** @module Public entry of the `arclight` package: protocol types and the store. */
export * from "./protocol/index.js";
export { StoreOpenError } from "./store/errors.js";
export { MemoryStore } from "./store/memory.js";
export { openStore, STORE_SPEC_HELP } from "./store/open.js";
export { SqliteStore, type SqliteStoreOptions } from "./store/sqlite.js";
export type { EventQuery, RolloutQuery, Store } from "./store/store.js";
