/**
 * @module The gateway as a child process on SQLite: the embedded engine's train step blocks this event loop for
 * seconds, and agents must still be answered meanwhile.
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

/** The argv running the CLI, compiled or under tsx; a path, since the run layer never imports the CLI. */
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
 * Starts `arclight gateway --port 0` on SQLite with `key` (default random) and more `env`, and waits for its URL.
 * @throws {ComponentStartFailed} when it exits or reports no URL within 30 s
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
