/**
 * @module The gateway's root logger: pino JSON lines, written in batches (one write per line costs a round trip
 * through libuv's thread pool per proxied call). Lines are held until 4 KiB or 200 ms, written at exit; a process
 * killed outright loses at most its last 200 ms.
 */
import { openSync } from "node:fs";
import { type Logger, pino } from "pino";

/** Bytes of log lines held before they are written. */
export const LOG_BATCH_BYTES = 4096;
/** The longest a line is held, ms. */
export const LOG_FLUSH_MS = 200;

/**
 * A pino logger writing batched JSON lines.
 * @param level - pino level (`info`, `debug`, … or `silent`)
 * @param dest - file descriptor (default 1, stdout) or file path (opened for appending, created if missing)
 * @returns the logger; its flush timer does not keep the process alive
 * @throws {Error} the path cannot be opened (Node's `ENOENT`, `EACCES`, …)
 */
export function gatewayLogger(level: string, dest: number | string = 1): Logger {
  // A path is opened here, not by the destination (which opens it later): lines held by a process that exits first
  // would have no file to go to.
  const fd = typeof dest === "number" ? dest : openSync(dest, "a");
  const destination = pino.destination({ dest: fd, minLength: LOG_BATCH_BYTES, sync: false });
  // Bytes handed to the destination and bytes it has written: while the first is ahead, lines are held, and every
  // tick asks for them to be written. (A flush asked while a write is in flight does nothing, and the write's end
  // leaves a short remainder held: a flag cleared at the tick lost those lines until the next one was logged.)
  let logged = 0;
  let written = 0;
  destination.on("write", (bytes: number) => {
    written += bytes;
  });
  const timer = setInterval(() => {
    if (logged > written) destination.flush();
  }, LOG_FLUSH_MS);
  timer.unref();
  // A destination ended or destroyed (pino's exit handler ends it) must not be flushed again: that throws.
  destination.once("close", () => clearInterval(timer));
  return pino(
    {
      level,
      hooks: {
        streamWrite: (line) => {
          logged += Buffer.byteLength(line);
          return line;
        },
      },
    },
    destination,
  );
}
