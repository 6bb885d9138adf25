/**
 * @module The gateway recorded rollouts are read from, for `arclight sft` and `arclight export`: a running one by URL,
 * or an earlier run's gateway.db opened by a gateway child process started here.
 */
import { existsSync } from "node:fs";
import { GatewayClient } from "../gateway/client.js";
import { startGatewayChild } from "../run/gateway-child.js";
import { CliError } from "./cli-error.js";

/** Where the rollouts are: exactly one of a URL and a database file. */
export interface SourceGatewayOptions {
  gatewayUrl: string | null;
  dbPath: string | null;
  /** Key of the running gateway; default ARCLIGHT_KEY, else AGL_KEY, else none. */
  key?: string;
  /** How the user named the file, for messages, e.g. `--db` or `source.db_path`. */
  dbFlag: string;
}

/** A client of the source gateway and how to let go of it. */
export interface SourceGateway {
  client: GatewayClient;
  close(): Promise<void>;
}

/**
 * Connects to the source gateway, starting a gateway child on the database file when one is given.
 * @param options - URL or database file, key
 * @returns the client and a close function (stops the child)
 * @throws {CliError} naming the file when it does not exist
 * @throws {ComponentStartFailed} when the gateway child does not start
 */
export async function openSourceGateway(options: SourceGatewayOptions): Promise<SourceGateway> {
  if (options.gatewayUrl !== null) {
    const key = options.key ?? process.env.ARCLIGHT_KEY ?? process.env.AGL_KEY ?? "";
    const client = new GatewayClient({ baseUrl: options.gatewayUrl, key });
    return { client, close: () => client.close() };
  }
  const db = options.dbPath as string;
  if (!existsSync(db)) throw new CliError(`${options.dbFlag} ${db}: no such file`);
  const child = await startGatewayChild(db, "policy", []);
  const client = new GatewayClient({ baseUrl: child.url, key: child.key });
  return {
    client,
    async close() {
      await client.close();
      await child.stop();
    },
  };
}
