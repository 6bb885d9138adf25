/** @module Public entry of the `arclight` package: protocol types, the store, and agent-token minting. */
/** Mints the scoped token a controller gives one attempt's agent as `AGL_KEY` (docs/security.md). */
export { agentKeyFor } from "./controller/agent-credentials.js";
/** Wire types, the rollout state machine, wire errors and validation. */
export * from "./protocol/index.js";
/** The error opening a store spec raises. */
export { StoreOpenError } from "./store/errors.js";
/** The in-memory store. */
export { MemoryStore } from "./store/memory.js";
/** Opens a store from a spec (`memory`, `sqlite:PATH`). */
export { openStore, STORE_SPEC_HELP } from "./store/open.js";
/** The SQLite store. */
export { SqliteStore, type SqliteStoreOptions } from "./store/sqlite.js";
/** The store interface every implementation satisfies, and its query filters. */
export type { EventQuery, RolloutQuery, Store } from "./store/store.js";
