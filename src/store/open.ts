/**
 * @module Opens the store a spec names: `memory` or `sqlite:PATH`.
 * Temporary: only `memory` is supported until the SQLite store lands (issue 2); `sqlite:` specs fail clearly.
 */
import { MemoryStore } from "./memory.js";
import type { Store } from "./store.js";

/**
 * Opens the store named by `spec`.
 * @param spec - `memory`, or `sqlite:PATH` (a file path, created when missing)
 * @returns the opened store; the caller closes it
 * @throws {Error} for an unknown spec, or a `sqlite:` spec while the SQLite store is not built in
 */
export async function openStore(spec: string): Promise<Store> {
  if (spec === "memory") return new MemoryStore();
  if (spec.startsWith("sqlite:")) {
    throw new Error(`store ${spec}: the SQLite store is not available in this build yet; use --store memory`);
  }
  throw new Error(`store ${spec}: expected "memory" or "sqlite:PATH"`);
}
