/**
 * @module What `arclight train` starts when it is not given running components: the gateway as a child process
 * (`arclight gateway` on SQLite under runs/NAME/), the embedded engine with its OpenAI server in this process, and a
 * local controller. The gateway runs apart because the embedded engine's train step blocks this process's event
 * loop for seconds; in its own process the gateway keeps answering agents (429 while paused) and storing events.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { ControllerConfigSchema } from "../controller/config.js";
import { LocalController } from "../controller/reconcile.js";
import type { Engine } from "../engine/engine.js";
import { buildEngineServer } from "../engine/server/app.js";
import type { GatewayClient } from "../gateway/client.js";
import { startServerChild } from "../process/server-child.js";
import { CliError } from "./program.js";

/** A gateway child process and its URL and key. */
export interface GatewayChild {
  url: string;
  key: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The argv that runs this CLI again: `node dist/cli/main.js` when compiled, `node --import tsx src/cli/main.ts` when
 * running from source under tsx.
 * @returns [executable, ...args]
 */
export function cliCommand(): string[] {
  const compiled = fileURLToPath(new URL("./main.js", import.meta.url));
  if (existsSync(compiled)) return [process.execPath, compiled];
  // Resolve tsx from this package, not from the working directory (runs may start anywhere).
  return [
    process.execPath,
    "--import",
    import.meta.resolve("tsx"),
    fileURLToPath(new URL("./main.ts", import.meta.url)),
  ];
}

/**
 * Starts `arclight gateway --port 0` on a SQLite store and waits for its "listening on URL" line.
 * @param dbPath - SQLite file, e.g. runs/NAME/gateway.db
 * @param modelName - the proxy's model name
 * @param extraArgs - more `arclight gateway` flags, e.g. `["--val-temperature", "0"]`
 * @returns the child, its URL and the random API key it was given
 * @throws {CliError} when the gateway exits or does not report its URL within 30 s
 */
export async function startGatewayChild(
  dbPath: string,
  modelName: string,
  extraArgs: readonly string[] = [],
): Promise<GatewayChild> {
  const key = randomBytes(16).toString("hex");
  // Own process group (startServerChild): a terminal Ctrl-C reaches only the parent, which stops the agents first
  // and this child last (were the gateway to die first, the controller could not report the agents' outcomes).
  const argv = [...cliCommand(), "gateway", "--port", "0", "--store", `sqlite:${dbPath}`, "--model-name", modelName];
  try {
    const child = await startServerChild({
      argv: [...argv, ...extraArgs, "--log-level", "warn"],
      env: { ARCLIGHT_KEY: key },
      urlPattern: /listening on (http:\/\/\S+?)\/?\s/,
      what: "gateway child",
      stopGraceMs: 15_000, // it flushes and closes its SQLite store on SIGTERM
    });
    return { url: child.url, key, process: child.process, stop: child.stop };
  } catch (error) {
    throw new CliError((error as Error).message);
  }
}

/**
 * Serves an engine through the OpenAI-compatible engine server on 127.0.0.1, a free port.
 * @returns the server and its `/v1` base URL
 */
export async function startEngineServer(
  engine: Engine,
  modelName: string,
): Promise<{ server: FastifyInstance; endpoint: string }> {
  // Stopped together with the gateway and agents that call it: closing must not wait for their open requests.
  const server = await buildEngineServer({ engine, modelName, forceCloseConnections: true });
  const url = await server.listen({ host: "127.0.0.1", port: 0 });
  return { server, endpoint: `${url}/v1` };
}

/**
 * Starts a local controller on the gateway.
 * @param client - gateway client
 * @param options - gateway URL and key, pool size, state file
 * @returns the started controller
 */
export function startController(
  client: GatewayClient,
  options: { gatewayUrl: string; key: string; poolSize: number; stateFile: string; logger: Logger },
): LocalController {
  const config = ControllerConfigSchema.parse({
    gateway_url: options.gatewayUrl,
    key: options.key,
    pool_size: options.poolSize,
    poll_interval_seconds: 0.2,
    state_file: options.stateFile,
  });
  const controller = new LocalController({ client, config, logger: options.logger, baseEnv: process.env });
  controller.start();
  return controller;
}
