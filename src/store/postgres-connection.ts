/** @module Lost connections (503, retry later) and lock conflicts (retry now) told from other PostgreSQL errors. */
import { StoreUnavailable } from "../protocol/index.js";

/** SQLSTATEs and socket codes meaning the server is gone or restarting (the write's fate is unknown). */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, shutting down, in recovery)
]);

/** node-postgres reports a dropped socket with these messages and no code. */
const CONNECTION_MESSAGES =
  /Connection terminated|connection error|timeout exceeded when trying to connect|not queryable/i;

/** @returns whether `err` means the connection to the server was refused, lost or cut by a shutdown */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = String((err as { code?: unknown }).code ?? "");
  return CONNECTION_CODES.has(code) || code.startsWith("08") || CONNECTION_MESSAGES.test(err.message);
}

/** SQLSTATEs of a transaction PostgreSQL aborted to break a conflict: safe to run again from the start. */
function isConflictAbort(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "40P01" || code === "40001"; // deadlock_detected, serialization_failure
}

/** A connection failure as {@link StoreUnavailable}; other errors unchanged. */
export function asStoreError(err: unknown, what: string): unknown {
  if (!isConnectionError(err)) return err;
  return new StoreUnavailable(`PostgreSQL store: ${what} failed, connection lost (${(err as Error).message})`, {
    cause: err,
  });
}

/** How many times a transaction aborted by a deadlock or serialisation failure is run again. */
const CONFLICT_RETRIES = 5;

/** Runs a transaction, again when PostgreSQL aborted it to break a deadlock. @throws {StoreUnavailable} */
export async function withConflictRetry<T>(what: string, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (isConflictAbort(err) && attempt < CONFLICT_RETRIES) continue;
      throw asStoreError(err, what);
    }
  }
}
