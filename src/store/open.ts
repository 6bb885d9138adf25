/**
 * @module The one place that picks a `Store` from a spec string: the gateway CLI's
 * `--store memory|sqlite:PATH|postgres://…`.
 */
import { StoreOpenError } from "./errors.js";
import { MemoryStore } from "./memory.js";
import { PostgresStore } from "./postgres.js";
import { SqliteStore } from "./sqlite.js";
import type { Store } from "./store.js";

/** The specs {@link openStore} accepts, for help texts. */
export const STORE_SPEC_HELP = "memory | sqlite:PATH | postgres://USER@HOST:PORT/DB";

/**
 * Opens the store a spec names: `memory` (nothing survives the process), `sqlite:PATH` (a SQLite file at PATH,
 * relative to the working directory; parent folders are created) or a `postgres://` / `postgresql://` URL (a
 * PostgreSQL database several gateways may share; the schema is created or migrated on open).
 * @param spec - e.g. `memory`, `sqlite:./.arclight/gateway.db`, `postgres://arclight@db:5432/arclight`
 * @param options - SQLite only: `lockWaitMs`, how long a write keeps trying while another process holds the file's
 *   write lock before it fails with `StoreUnavailable` (default 10 000)
 * @returns an open store; the caller closes it
 * @throws {StoreOpenError} an unknown spec, an empty PATH, a file that cannot be opened as a store, or a database
 *   that cannot be reached
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
