/**
 * @module The gateway as a child process: `arclight gateway --port 0` on a SQLite store, with a random key. It runs
 * apart because the embedded engine's train step blocks this process's event loop for seconds; in its own process
 * the gateway keeps answering agents (429 while paused) and storing events.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startServerChild } from "../process/server-child.js";

/** A component of the stack that did not start; the CLI prints its message as one line. */
export class ComponentStartFailed extends Error {
  /** @param message - names the component and what happened, e.g. `gateway child exited (code 1) before listening` */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ComponentStartFailed";
  }
}

/** A gateway child process and its URL and key. */
export interface GatewayChild {
  url: string;
  key: string;
  process: ChildProcess;
  /** SIGTERM (the gateway flushes and closes its store), SIGKILL after 15 s; resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * The argv that runs the arclight CLI: `node dist/cli/main.js` when compiled, `node --import tsx src/cli/main.ts`
 * when running from source under tsx. A path, not an import: the run layer never imports the CLI.
 * @returns [executable, ...args]
 */
export function cliCommand(): string[] {
  const compiled = fileURLToPath(new URL("../cli/main.js", import.meta.url));
  if (existsSync(compiled)) return [process.execPath, compiled];
  // Resolve tsx from this package, not from the working directory (runs may start anywhere).
  return [
    process.execPath,
    "--import",
    import.meta.resolve("tsx"),
    fileURLToPath(new URL("../cli/main.ts", import.meta.url)),
  ];
}

/**
 * Starts `arclight gateway --port 0` on a SQLite store and waits for its "listening on URL" line.
 * @param dbPath - SQLite file, e.g. runs/NAME/gateway.db
 * @param modelName - the proxy's model name
 * @param extraArgs - more `arclight gateway` flags, e.g. `["--val-temperature", "0"]`
 * @param key - the API key to give it (`ARCLIGHT_KEY`); default a random one
 * @param env - more environment for it, e.g. `{ ARCLIGHT_UPSTREAM_KEY }`
 * @returns the child, its URL and its API key
 * @throws {ComponentStartFailed} when the gateway exits or does not report its URL within 30 s
 */
export async function startGatewayChild(
  dbPath: string,
  modelName: string,
  extraArgs: readonly string[] = [],
  key: string = randomBytes(16).toString("hex"),
  env: Readonly<Record<string, string>> = {},
): Promise<GatewayChild> {
  // Own process group (startServerChild): a terminal Ctrl-C reaches only the parent, which stops the agents first
  // and this child last (were the gateway to die first, the controller could not report the agents' outcomes).
  const argv = [...cliCommand(), "gateway", "--port", "0", "--store", `sqlite:${dbPath}`, "--model-name", modelName];
  try {
    const child = await startServerChild({
      argv: [...argv, ...extraArgs, "--log-level", "warn"],
      env: { ...env, ARCLIGHT_KEY: key },
      urlPattern: /listening on (http:\/\/\S+?)\/?\s/,
      what: "gateway child",
      stopGraceMs: 15_000, // it flushes and closes its SQLite store on SIGTERM
    });
    return { url: child.url, key, process: child.process, stop: child.stop };
  } catch (error) {
    throw new ComponentStartFailed((error as Error).message, { cause: error });
  }
}
