/**
 * @module `arclight gateway`: opens the store, serves the gateway HTTP API, and on SIGINT/SIGTERM stops accepting,
 * drains in-flight requests, closes the store and exits 0.
 */
import type { Command } from "commander";
import { buildApp } from "../gateway/app.js";
import type { GatewayConfig } from "../gateway/config.js";
import { gatewayLogger } from "../gateway/logger.js";
import { closeWithGrace } from "../http/server-timeouts.js";
import { stopWhenParentGone } from "../process/parent-watch.js";
import { openStore } from "../store/open.js";
import { PostgresStore, redact } from "../store/postgres.js";
import type { SharedPause } from "../store/shared-pause.js";
import type { Store } from "../store/store.js";
import { CliError } from "./cli-error.js";
import { type GatewayFlags, loadGatewayConfig } from "./gateway-config.js";
import { warnKeyOnArgv } from "./key-source.js";

/** Opens the configured store, turning failures into a CLI error naming the store (from --store, ARCLIGHT_STORE or the config file). */
async function openConfiguredStore(spec: string, lockWaitSeconds: number): Promise<Store> {
  try {
    return await openStore(spec, { lockWaitMs: lockWaitSeconds * 1000 });
  } catch (err) {
    throw new CliError(`store ${redact(spec)}: ${(err as Error).message}`);
  }
}

/** `http://host:port/`, with IPv6 hosts bracketed. */
function baseUrl(host: string, port: number): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/**
 * Runs the gateway until SIGINT or SIGTERM.
 * @param config - the resolved configuration
 * @returns once the server has drained and the store is closed
 * @throws {CliError} when the store cannot be opened or the address cannot be bound
 */
export async function runGateway(config: Readonly<GatewayConfig>): Promise<void> {
  const logger = gatewayLogger(config.log_level);
  const store = await openConfiguredStore(config.store, config.store_lock_wait_seconds);
  let sharedPause: SharedPause | undefined;
  try {
    // Gateways sharing a PostgreSQL database share the proxy pause: a pause on one pauses all.
    if (store instanceof PostgresStore) sharedPause = await store.sharedPause();
  } catch (err) {
    await store.close();
    throw new CliError(`store ${redact(config.store)}: ${(err as Error).message}`);
  }
  const app = buildApp({ store, config, logger, sharedPause });
  if (config.key === "") {
    const warning =
      "WARNING: no API key set (ARCLIGHT_KEY, --key-file or --key): every route is open to anyone, agents included";
    console.error(`arclight gateway: ${warning}`);
    logger.warn({ component: "gateway" }, "auth disabled: empty key");
  }
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await store.close();
    throw new CliError(`--host ${config.host} --port ${config.port}: cannot listen (${(err as Error).message})`);
  }
  const address = app.server.address();
  const port = address !== null && typeof address === "object" ? address.port : config.port;
  console.log(`arclight gateway listening on ${baseUrl(config.host, port)} (store ${redact(config.store)})`);
  if (config.dashboard) console.log(`arclight dashboard: ${baseUrl(config.host, port)}/ui/`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
    // A gateway child of `arclight train` / `demo` whose parent was killed outright, or one under a stopped npx, stops
    // the same way.
    stopWhenParentGone();
  });
  logger.info({ component: "gateway", signal }, "shutting down: draining in-flight requests");
  // app.close() stops accepting, closes idle keep-alive sockets and waits for in-flight requests to finish; after the
  // grace period, sockets still open (a half-sent body, a stalled client) are destroyed so shutdown cannot hang.
  await closeWithGrace(() => app.close(), app.server, config.shutdown_grace_seconds * 1000);
  await store.close();
  logger.info({ component: "gateway" }, "gateway stopped");
}

/** Registers `arclight gateway` on the program. */
export function registerGateway(program: Command): void {
  program
    .command("gateway")
    .description("Serve the rollout, event and model HTTP API (Agent Lightning v1.0 compatible) and the LLM proxy")
    .showHelpAfterError(false)
    .option("--config <file>", "YAML file with gateway keys (flags and env override it)")
    .option("--host <host>", "interface to listen on (default 127.0.0.1)")
    .option("--port <port>", "TCP port, 0 for any free one (default 8080)")
    .option("--key <key>", "admin key (visible in ps: prefer ARCLIGHT_KEY or --key-file); empty disables auth")
    .option("--key-file <path>", "file whose first line is the admin key; also ARCLIGHT_KEY_FILE")
    .option(
      "--store <spec>",
      "memory | sqlite:PATH | postgres://USER@HOST:PORT/DB; also ARCLIGHT_STORE (default sqlite:./.arclight/gateway.db)",
    )
    .option("--model-name <name>", "model name the proxy sends upstream (default: the agent's own)")
    .option("--train-temperature <t>", "sampling temperature in train mode (default 1)")
    .option("--val-temperature <t>", "sampling temperature in val mode (default 0.7)")
    .option("--include-log-probs <bool>", "true|false: ask the upstream for logprobs in train mode (default true)")
    .option("--body-limit-bytes <n>", "largest request body in bytes (default 33554432 = 32 MiB)")
    .option("--upstream-timeout-seconds <s>", "proxy upstream timeout in seconds (default 600)")
    .option("--headers-timeout-seconds <s>", "seconds a client has to send request headers (default 30)")
    .option("--request-timeout-seconds <s>", "seconds a client has to send a whole request (default 300)")
    .option(
      "--shutdown-grace-seconds <s>",
      "on SIGTERM, seconds in-flight requests get before sockets close (default 30)",
    )
    .option("--log-level <level>", "fatal|error|warn|info|debug|trace|silent (default info)")
    .option("--dashboard <bool>", "true|false: serve the browser dashboard at /ui (default true)")
    .option("--dashboard-key <key>", "read-only key for the dashboard login (the gateway key also logs in)")
    .option("--runs-dir <dir>", "show the finished runs in DIR (NAME/metrics.jsonl) on the dashboard, e.g. runs")
    .action(async (flags: GatewayFlags) => {
      const config = loadGatewayConfig(flags, process.env);
      warnKeyOnArgv("gateway", flags);
      await runGateway(config);
    });
}
