/**
 * @module A minimal gateway for proxy tests and the proxy bench: Fastify with the gateway's error handler and request
 * gate (request id, auth, access), a store, and the proxy plugin, listening on 127.0.0.1 port 0.
 */
import Fastify, { type FastifyInstance } from "fastify";
import { errorHandler } from "../../http/error-handler.js";
import { answerHalfClosedRequests } from "../../http/half-close.js";
import { type ModelInput, RolloutCreateSchema } from "../../protocol/index.js";
import { MemoryStore } from "../../store/memory.js";
import type { Store } from "../../store/store.js";
import { type ProxyOptionsInput, resolveProxyOptions } from "../proxy/options.js";
import { PauseController } from "../proxy/pause.js";
import { ProxyService } from "../proxy/serve-call.js";
import { requestGate } from "../request-gate.js";
import { proxyRoutes } from "../routes/proxy.js";

/** A running proxy under test. */
export interface ProxyHarness {
  app: FastifyInstance;
  store: Store;
  pause: PauseController;
  /** `http://127.0.0.1:PORT` */
  baseUrl: string;
  key: string;
  /** The OpenAI base URL an agent of this rollout attempt uses. */
  openaiBase(rolloutId: string, attemptId?: string, mode?: string): string;
  /** Creates a rollout (attempt "0") and returns its id. */
  newRollout(rolloutId?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts the harness.
 * @param setup - proxy options, registered endpoints, store (memory by default), API key ("test-key" by default), and
 *   the clock pause leases are measured by (`nowMs`, default `Date.now`)
 */
export async function startProxyHarness(
  setup: { options?: ProxyOptionsInput; models?: ModelInput[]; store?: Store; key?: string; nowMs?: () => number } = {},
): Promise<ProxyHarness> {
  const store = setup.store ?? new MemoryStore();
  const key = setup.key ?? "test-key";
  const options = resolveProxyOptions({
    modelName: "policy",
    retryBackoffBaseMs: 5,
    retryBackoffMaxMs: 20,
    ...setup.options,
  });
  if (setup.models?.length) {
    await store.upsertModels(setup.models.map((m) => ({ version: 0, ...m })));
  }
  const pause = new PauseController(undefined, setup.nowMs);
  const app = Fastify({ logger: false });
  answerHalfClosedRequests(app.server);
  app.setErrorHandler(errorHandler);
  app.addHook("onRequest", requestGate(key));
  const service = new ProxyService(store, options, pause, app.log);
  await app.register(proxyRoutes, { service });
  const baseUrl = await app.listen({ host: "127.0.0.1", port: 0 });
  let counter = 0;
  return {
    app,
    store,
    pause,
    baseUrl,
    key,
    openaiBase: (rid, aid = "0", mode = "train") =>
      `${baseUrl}/proxy/rollout/${rid}/attempt/${aid}/mode/${mode}/openai/v1`,
    newRollout: async (rolloutId = `ro-test-${++counter}`) => {
      const [rollout] = await store.createRollouts([RolloutCreateSchema.parse({ rollout_id: rolloutId, input: {} })]);
      return rollout!.rollout_id;
    },
    close: async () => {
      await app.close();
      await store.close();
    },
  };
}
