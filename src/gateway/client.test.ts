import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { InvalidTransition, RolloutNotFound, StaleAttempt, Unauthorized, ValidationFailed } from "../protocol/index.js";
import { MemoryStore } from "../store/memory.js";
import type { Store } from "../store/store.js";
import { buildApp } from "./app.js";
import { GatewayClient, GatewayClientClosed, GatewayHttpError, GatewayUnreachable } from "./client.js";
import { gatewayConfig } from "./config.js";
import { startProxyHarness } from "./testing/proxy-harness.js";
import { startTestGateway, type TestGateway } from "./testing/serve.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(store?: Store, clientKey = "test-key"): Promise<{ gateway: TestGateway; client: GatewayClient }> {
  const gateway = await startTestGateway({ key: "test-key" }, store);
  const client = new GatewayClient({ baseUrl: `${gateway.url}/`, key: clientKey, retryBackoffBaseMs: 5 });
  cleanups.push(
    () => gateway.close(),
    () => client.close(),
  );
  return { gateway, client };
}

/** A real MemoryStore whose `method` throws its first `failures` calls (the gateway answers 500 to those). */
function flakyStore(method: keyof Store, failures: number): { store: Store; calls: () => number } {
  const inner = new MemoryStore();
  let calls = 0;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== method || typeof value !== "function")
        return typeof value === "function" ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        calls++;
        if (calls <= failures) throw new Error("disk on fire");
        return value.apply(target, args);
      };
    },
  });
  return { store, calls: () => calls };
}

/** A port nothing listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === "object" && address !== null ? address.port : 0;
}

describe("GatewayClient against the real gateway", () => {
  it("creates, lists, pages, gets, patches and deletes rollouts, and follows the terminal cursor", async () => {
    const { client } = await setup();
    expect(await client.healthz()).toEqual({ status: "ok" });
    const created = await client.createRollouts([
      { rollout_id: "a", input: { data_id: "d1" } },
      { rollout_id: "b", input: {}, is_train: false },
      { rollout_id: "c", input: {} },
    ]);
    expect(created.map((r) => r.status.state)).toEqual(["queuing", "queuing", "queuing"]);
    expect((await client.createRollouts([{ rollout_id: "a", input: "changed" }]))[0]!.input).toEqual({ data_id: "d1" });
    expect((await client.listRollouts({ isTrain: false })).map((r) => r.rollout_id)).toEqual(["b"]);
    expect((await client.listRollouts({ limit: 1, offset: 1 })).map((r) => r.rollout_id)).toEqual(["b"]);
    expect((await client.listAllRollouts({}, 2)).map((r) => r.rollout_id)).toEqual(["a", "b", "c"]);

    await client.patchRollout("a", { status: { state: "running", last_attempt_id: "0" } });
    const done = await client.patchRollout("a", { status: { state: "succeeded" } });
    expect(done.status.state).toBe("succeeded");
    expect((await client.listRollouts({ states: ["queuing", "running"] })).map((r) => r.rollout_id)).toEqual([
      "b",
      "c",
    ]);
    const page = await client.terminal(0, 10);
    expect(page.items).toEqual([{ rollout_id: "a", state: "succeeded", data_id: "d1", is_train: true }]);
    expect((await client.terminal(page.next_after)).items).toEqual([]);
    expect((await client.getRollout("a")).rollout.status.state).toBe("succeeded");

    await client.deleteRollout("b");
    await client.deleteRollout("b"); // deleting twice is fine
    await expect(client.getRollout("b")).rejects.toBeInstanceOf(RolloutNotFound);
  });

  it("posts events one or many, idempotently by event_id, and reads them raw and as triplets", async () => {
    const { client } = await setup();
    await client.createRollouts([{ rollout_id: "r", input: {} }]);
    const first = await client.postEvent("r", "0", {
      event_type: "reward",
      event_id: "e1",
      data: { value: 1, source: "t" },
    });
    const again = await client.postEvent("r", "0", {
      event_type: "reward",
      event_id: "e1",
      data: { value: 1, source: "t" },
    });
    expect(again.sequence).toBe(first.sequence);
    const many = await client.postEvents("r", "0", [
      { event_type: "log", data: { text: "x" } },
      { event_type: "custom" },
    ]);
    expect(many.map((e) => e.sequence)).toEqual([2, 3]);
    expect(many.every((e) => typeof e.event_id === "string")).toBe(true); // filled in, so retries are safe
    expect((await client.getEvents("r")).map((e) => e.event_type)).toEqual(["reward", "log", "custom"]);
    const rewards = await client.getEvents("r", { eventType: "reward", format: "triplet" });
    expect(rewards.map((e) => e.data)).toEqual([{ value: 1, source: "t" }]);
    expect((await client.getRollout("r")).attempts).toEqual(["0"]);
  });

  it("upserts and deletes models", async () => {
    const { client, gateway } = await setup();
    const models = await client.upsertModels([{ model: "policy", endpoint: "http://127.0.0.1:9/v1", version: 3 }]);
    expect(models).toEqual([{ model: "policy", endpoint: "http://127.0.0.1:9/v1", version: 3 }]);
    await client.deleteModels();
    expect(await gateway.store.listModels()).toEqual([]);
  });

  it("turns error bodies back into the protocol classes the gateway threw", async () => {
    const { client } = await setup();
    const missing = await client.getRollout("nope").catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(RolloutNotFound);
    expect((missing as RolloutNotFound).rolloutId).toBe("nope");
    expect((missing as RolloutNotFound).message).toBe("Rollout nope not found");

    await client.createRollouts([{ rollout_id: "r", input: {} }]);
    await expect(client.patchRollout("r", { status: { state: "succeeded" } })).rejects.toThrow(
      new InvalidTransition("r", "queuing", "succeeded"),
    );
    // Attempt "0" superseded by a patch naming attempt "b": the error names the current attempt.
    await client.patchRollout("r", { status: { last_attempt_id: "b" } });
    const stale = await client.postEvent("r", "0", { event_type: "log" }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(StaleAttempt);
    expect((stale as StaleAttempt).status).toBe(409);
    expect((stale as StaleAttempt).currentAttemptId).toBe("b");

    const invalid = await client
      .patchRollout("r", { input: 1 } as unknown as Parameters<GatewayClient["patchRollout"]>[1])
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(ValidationFailed);
    expect((invalid as ValidationFailed).issues[0]!.type).toBe("unrecognized_keys");
  });

  it("raises Unauthorized for a wrong key", async () => {
    const { client } = await setup(undefined, "wrong-key");
    expect(await client.healthz()).toEqual({ status: "ok" });
    await expect(client.listRollouts()).rejects.toBeInstanceOf(Unauthorized);
  });

  it("retries an idempotent call that got 500s, but never a patch", async () => {
    const flaky = flakyStore("listRollouts", 2);
    const { client } = await setup(flaky.store);
    expect(await client.listRollouts()).toEqual([]);
    expect(flaky.calls()).toBe(3);

    const flakyPatch = flakyStore("patchRollout", 1);
    const second = await setup(flakyPatch.store);
    await second.client.createRollouts([{ rollout_id: "r", input: {} }]);
    const err = await second.client.patchRollout("r", { status: { state: "running" } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayHttpError);
    expect((err as GatewayHttpError).status).toBe(500);
    expect(flakyPatch.calls()).toBe(1);
  });

  it("retries while the gateway is not up yet, and gives up with GatewayUnreachable", async () => {
    const port = await freePort();
    const client = new GatewayClient({
      baseUrl: `http://127.0.0.1:${port}`,
      retries: 40,
      retryBackoffBaseMs: 20,
      retryBackoffMaxMs: 50,
    });
    cleanups.push(() => client.close());
    // A create without rollout_id is not idempotent, but a refused connection proves it was never sent.
    const pending = client.createRollouts([{ input: { late: true } }]);
    const store = new MemoryStore();
    const app = buildApp({ store, config: gatewayConfig({ key: "" }) });
    await app.listen({ host: "127.0.0.1", port });
    cleanups.push(() => app.close());
    const [created] = await pending;
    expect(created!.input).toEqual({ late: true });
    expect(await store.listRollouts()).toHaveLength(1);

    const nobody = new GatewayClient({
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      retries: 2,
      retryBackoffBaseMs: 1,
    });
    cleanups.push(() => nobody.close());
    await expect(nobody.healthz()).rejects.toBeInstanceOf(GatewayUnreachable);
  });

  it("after close() every call fails at once with GatewayClientClosed, without retrying", async () => {
    const { gateway } = await setup();
    // A minute's backoff: a retry would outlast the test's timeout.
    const client = new GatewayClient({ baseUrl: gateway.url, key: "test-key", retryBackoffBaseMs: 60_000 });
    expect((await client.healthz()).status).toBe("ok");
    await client.close();
    await client.close(); // twice is fine
    await expect(client.healthz()).rejects.toBeInstanceOf(GatewayClientClosed);
    await expect(client.deleteModels()).rejects.toThrow("DELETE /api/models: the GatewayClient was closed");
  });

  it("pauses, reads and resumes the proxy", async () => {
    const h = await startProxyHarness();
    const client = new GatewayClient({ baseUrl: h.baseUrl, key: h.key });
    cleanups.push(
      () => h.close(),
      () => client.close(),
    );
    await client.pauseProxy({ retry_after_seconds: 7, reason: "weight update" });
    expect(await client.proxyState()).toEqual({
      paused: true,
      retry_after_seconds: 7,
      reason: "weight update",
      inflight: 0,
      lease_expires_at: null,
    });
    await client.resumeProxy();
    expect((await client.proxyState()).paused).toBe(false);
  });
});
