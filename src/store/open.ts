/** @module Picks a `Store` from a spec string (`--store memory|sqlite:PATH|postgres://…`). */
import { StoreOpenError } from "./errors.js";
import { MemoryStore } from "./memory.js";
import { PostgresStore } from "./postgres.js";
import { SqliteStore } from "./sqlite.js";
import type { Store } from "./store.js";

/** The specs {@link openStore} accepts, for help texts. */
export const STORE_SPEC_HELP = "memory | sqlite:PATH | postgres://USER@HOST:PORT/DB";

/**
 * Opens `memory`, `sqlite:PATH` (parents created) or a `postgres://` URL (schema migrated on open); the caller closes
 * it. `lockWaitMs` (SQLite): how long a write waits on another process's lock before `StoreUnavailable`.
 * @throws {StoreOpenError} for a bad spec or a store that cannot be opened or reached
 */
export async function openStore(spec: string, options: { lockWaitMs?: number } = {}): Promise<Store> {
  if (spec === "memory") return new MemoryStore();
  if (spec.startsWith("sqlite:")) {
    const path = spec.slice("sqlite:".length);
    if (path === "") throw new StoreOpenError(`store spec "${spec}" names no file; expected sqlite:PATH`);
    return SqliteStore.open(path, { lockWaitMs: options.lockWaitMs });
  }
  if (/^postgres(ql)?:\/\//.test(spec)) return PostgresStore.open(spec);
  throw new StoreOpenError(`unknown store spec "${spec}"; expected ${STORE_SPEC_HELP}`);
}
