/** @module Test helper: a real gateway listening on 127.0.0.1, port 0, plus a `fetch` wrapper that sends the key. */
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import { MemoryStore } from "../../store/memory.js";
import type { Store } from "../../store/store.js";
import { buildApp } from "../app.js";
import { type GatewayConfigInput, gatewayConfig } from "../config.js";

/** A running test gateway. */
export interface TestGateway {
  app: FastifyInstance;
  store: Store;
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** `fetch(url + path)` with the key as a Bearer token and JSON bodies serialised. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** Stops the server; closes the store unless `keepStore`. */
  close(options?: { keepStore?: boolean }): Promise<void>;
}

/**
 * Starts a gateway on an ephemeral port.
 * @param config - config overrides; `key` defaults to "test-key"
 * @param store - the store to serve; a fresh MemoryStore when absent
 * @param logger - root logger; silent when absent
 */
export async function startTestGateway(
  config: GatewayConfigInput = {},
  store?: Store,
  logger?: FastifyBaseLogger,
): Promise<TestGateway> {
  const usedStore = store ?? new MemoryStore();
  const frozen = gatewayConfig({ key: "test-key", ...config });
  const server = buildApp({ store: usedStore, config: frozen, logger });
  await server.listen({ host: "127.0.0.1", port: 0 });
  const address = server.server.address();
  if (address === null || typeof address === "string") throw new Error("gateway did not bind a TCP port");
  const url = `http://127.0.0.1:${address.port}`;
  return {
    app: server,
    store: usedStore,
    url,
    call(method, path, body, headers = {}) {
      const auth: Record<string, string> = frozen.key ? { authorization: `Bearer ${frozen.key}` } : {};
      const json: Record<string, string> = body === undefined ? {} : { "content-type": "application/json" };
      return fetch(url + path, {
        method,
        headers: { ...auth, ...json, ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    },
    async close(options = {}) {
      await server.close();
      if (!options.keepStore) await usedStore.close();
    },
  };
}
