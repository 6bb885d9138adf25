/** @module The one place that picks a `Store` from a spec string: the gateway CLI's `--store memory|sqlite:PATH`. */
import { StoreOpenError } from "./errors.js";
import { MemoryStore } from "./memory.js";
import { SqliteStore } from "./sqlite.js";
import type { Store } from "./store.js";

/** The specs {@link openStore} accepts, for help texts. */
export const STORE_SPEC_HELP = "memory | sqlite:PATH";

/**
 * Opens the store a spec names: `memory` (nothing survives the process) or `sqlite:PATH` (a SQLite file at PATH,
 * relative to the working directory; parent folders are created).
 * @param spec - e.g. `memory`, `sqlite:./.arclight/gateway.db`
 * @returns an open store; the caller closes it
 * @throws {StoreOpenError} an unknown spec, an empty PATH, or a file that cannot be opened as a store
 */
export async function openStore(spec: string): Promise<Store> {
  if (spec === "memory") return new MemoryStore();
  if (spec.startsWith("sqlite:")) {
    const path = spec.slice("sqlite:".length);
    if (path === "") throw new StoreOpenError(`store spec "${spec}" names no file; expected sqlite:PATH`);
    return SqliteStore.open(path);
  }
  throw new StoreOpenError(`unknown store spec "${spec}"; expected ${STORE_SPEC_HELP}`);
}
