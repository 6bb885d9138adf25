/**
 * Scenario: two `arclight gateway` processes (replicas) on one PostgreSQL database, as behind a Kubernetes Service.
 * Agents on the real `openai` SDK are split across them; the trainer's pause goes to one replica; PostgreSQL is
 * restarted under load. Everything is real: the server (a throw-away cluster), the gateway child processes, HTTP.
 */
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../src/gateway/client.js";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import { startServerChild } from "../src/process/server-child.js";
import type { Event } from "../src/protocol/index.js";
import { PostgresServer, skipWithoutPostgres } from "../src/testing/postgres-server.js";

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const KEY = "replica-key";

/** Polls `check` until it is true or `timeoutMs` passed. */
async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}

describe.skipIf(skipWithoutPostgres())("two gateways on one PostgreSQL database", () => {
  let server: PostgresServer;
  let fake: FakeVllm;
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  beforeAll(async () => {
    server = await PostgresServer.start();
    fake = await FakeVllm.start();
  });
  afterAll(async () => {
    await fake?.close();
    server?.stop();
  });
  afterEach(async () => {
    fake.behave({});
    fake.release();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** Starts two gateway processes on a fresh database. @returns a client per replica and their URLs */
  async function twoReplicas(): Promise<{ urls: string[]; clients: GatewayClient[]; stops: (() => Promise<void>)[] }> {
    const store = await server.createDatabase();
    const argv = [process.execPath, "--import", "tsx", MAIN, "gateway", "--port", "0", "--key", KEY];
    const children = await Promise.all(
      [0, 1].map(() =>
        startServerChild({
          argv: [...argv, "--model-name", "policy", "--log-level", "fatal"],
          env: { ARCLIGHT_STORE: store },
          urlPattern: /listening on (http:\/\/\S+)/,
          what: "gateway replica",
          startTimeoutMs: 60_000,
        }),
      ),
    );
    for (const child of children) cleanups.push(() => child.stop());
    const urls = children.map((c) => c.url);
    const clients = urls.map((baseUrl) => new GatewayClient({ baseUrl, key: KEY, retries: 8 }));
    for (const client of clients) cleanups.push(() => client.close());
    await clients[0]!.upsertModels([{ model: "policy", endpoint: fake.url, version: 1 }]);
    return { urls, clients, stops: children.map((c) => () => c.stop()) };
  }

  /** An agent's OpenAI client on replica `url` for rollout `rid` (the SDK retries 429/5xx and connection errors). */
  function agent(url: string, rid: string, maxRetries = 2): OpenAI {
    const baseURL = `${url}/proxy/rollout/${rid}/attempt/0/mode/train/openai/v1`;
    return new OpenAI({ baseURL, apiKey: KEY, maxRetries, timeout: 30_000 });
  }

  it("64 concurrent agents split across the replicas lose nothing: every call and reward stored, gap-free", async () => {
    const { urls, clients } = await twoReplicas();
    const ids = Array.from({ length: 64 }, (_, i) => `r${i}`);
    await clients[0]!.createRollouts(ids.map((rollout_id) => ({ rollout_id, input: { i: rollout_id } })));
    // Each agent: 3 model calls through its replica, then a reward posted through the other one.
    await Promise.all(
      ids.map(async (rid, i) => {
        const openai = agent(urls[i % 2]!, rid);
        for (let call = 0; call < 3; call++) {
          await openai.chat.completions.create({ model: "m", messages: [{ role: "user", content: `${rid}/${call}` }] });
        }
        await clients[(i + 1) % 2]!.postEvent(rid, "0", {
          event_type: "reward",
          event_id: `reward-${rid}`,
          data: { value: 1 },
        });
      }),
    );
    for (const [i, rid] of ids.entries()) {
      const events = await clients[i % 2]!.getEvents(rid);
      expect(events.map((e) => e.sequence)).toEqual([1, 2, 3, 4]);
      expect(events.map((e) => e.event_type)).toEqual(["model_request", "model_request", "model_request", "reward"]);
      const prompts = events.slice(0, 3).map((e) => contentOf(e));
      expect(prompts).toEqual([`${rid}/0`, `${rid}/1`, `${rid}/2`]);
    }
  });

  it("a pause sent to one replica turns agents away on the other; drain waits for the other's call", async () => {
    const { urls, clients } = await twoReplicas();
    await clients[0]!.createRollouts([
      { rollout_id: "held", input: 0 },
      { rollout_id: "late", input: 0 },
    ]);
    fake.behave({ holdAfterEvents: 0 });
    // A call in flight on replica 1, held by the upstream.
    const heldCall = agent(urls[1]!, "held").chat.completions.create({ model: "m", messages: [] });
    await fake.waitForHeld(1);
    const paused = await clients[0]!.pauseProxy({ retry_after_seconds: 1, reason: "weight update" });
    expect(paused).toMatchObject({ paused: true, reason: "weight update" });
    expect(paused.inflight).toBeGreaterThanOrEqual(1); // replica 1's call, or replica 1 not yet acknowledged
    // Replica 1 applies the pause (a notification away) and refuses new calls with AGL's 429.
    const refused = await until(async () => {
      const res = await fetch(`${urls[1]}/proxy/rollout/late/attempt/0/mode/train/openai/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [] }),
      });
      await res.arrayBuffer();
      return res.status === 429 && res.headers.get("x-agl-paused") === "true";
    });
    expect(refused).toBe(true);
    // The held call, plus any probe that reached replica 1 before the pause did (the upstream holds it too).
    const onReplica1 = await clients[1]!.proxyState();
    expect(onReplica1).toMatchObject({ paused: true, reason: "weight update" });
    expect(onReplica1.inflight).toBeGreaterThanOrEqual(1);
    // Replica 0 counts replica 1's held calls: not drained until they end. (Its figure is its own calls plus the
    // count replica 1 last wrote to PostgreSQL, or 1 while replica 1 has not acknowledged the pause; replica 1's is its
    // own plus replica 0's row. The two views need not be equal at any one moment, so only "not drained" is checked.)
    expect((await clients[0]!.proxyState()).inflight).toBeGreaterThanOrEqual(1);
    await new Promise((resolve) => setTimeout(resolve, 1500)); // past a heartbeat: still counted
    expect((await clients[0]!.proxyState()).inflight).toBeGreaterThanOrEqual(1);
    fake.release();
    await heldCall;
    expect(await until(async () => (await clients[0]!.proxyState()).inflight === 0)).toBe(true);
    // A resume sent to replica 1 lets agents in on replica 0.
    await clients[1]!.resumeProxy();
    fake.behave({});
    const after = await until(async () => {
      const res = await agent(urls[0]!, "late", 0)
        .chat.completions.create({ model: "m", messages: [] })
        .then(() => true)
        .catch(() => false);
      return res;
    });
    expect(after).toBe(true);
  });

  it("a pause lease renewed through the other replica holds on both; it ends on all when its replica is gone", async () => {
    const { clients, stops } = await twoReplicas();
    const first = await clients[0]!.pauseProxy({ reason: "update", lease_seconds: 1.5 });
    expect(first.lease_expires_at).toBeGreaterThan(Date.now() / 1000);
    expect(await until(async () => (await clients[1]!.proxyState()).lease_expires_at === first.lease_expires_at)).toBe(
      true,
    );
    // Renewed through replica 1 (as behind a load balancer): replica 0 must not end it at the first expiry.
    const renewed = await clients[1]!.pauseProxy({ reason: "update", lease_seconds: 4 });
    await new Promise((resolve) => setTimeout(resolve, 2000)); // past the first lease, within the renewed one
    expect(await clients[0]!.proxyState()).toMatchObject({ paused: true, lease_expires_at: renewed.lease_expires_at });
    // A short pause through replica 0, then replica 0 goes away: replica 1 ends the pause by itself.
    await clients[0]!.pauseProxy({ reason: "crash", lease_seconds: 1 });
    expect(await until(async () => (await clients[1]!.proxyState()).reason === "crash")).toBe(true);
    await stops[0]!();
    expect(await until(async () => !(await clients[1]!.proxyState()).paused, 5000)).toBe(true);
  });

  it("PostgreSQL restarted mid-run: replicas reconnect; every acknowledged call and event is stored", async () => {
    const { urls, clients } = await twoReplicas();
    const ids = Array.from({ length: 16 }, (_, i) => `r${i}`);
    await clients[0]!.createRollouts(ids.map((rollout_id) => ({ rollout_id, input: 0 })));
    const acknowledged = new Map<string, string[]>(ids.map((id) => [id, []]));
    let restarted = false;
    let callsBeforeRestart = 0;
    const statuses: number[] = [];
    const agents = ids.map(async (rid, i) => {
      // Generous retries: the SDK backs off 0.5 s, 1 s, 2 s, … on 503 while the server is down.
      const openai = new OpenAI({
        baseURL: `${urls[i % 2]}/proxy/rollout/${rid}/attempt/0/mode/train/openai/v1`,
        apiKey: KEY,
        maxRetries: 10,
        fetch: async (url, init) => {
          const res = await fetch(url, init);
          statuses.push(res.status);
          return res;
        },
      });
      for (let call = 0; call < 8; call++) {
        const marker = `${rid}/${call}`;
        await openai.chat.completions.create({ model: "m", messages: [{ role: "user", content: marker }] });
        acknowledged.get(rid)!.push(marker);
        await clients[(i + 1) % 2]!.postEvent(rid, "0", { event_type: "log", event_id: `log-${marker}`, data: {} });
        acknowledged.get(rid)!.push(`log-${marker}`);
        if (!restarted) callsBeforeRestart++;
      }
    });
    // Restart once the agents are well under way (not before their first calls, not after their last).
    expect(await until(async () => callsBeforeRestart >= 16)).toBe(true);
    expect(callsBeforeRestart).toBeLessThan(64); // well before the last of the 128 calls
    await server.restart(1000); // down for a second: agents keep calling and get 503s meanwhile
    restarted = true;
    await Promise.all(agents);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0); // the outage reached the agents
    for (const [i, rid] of ids.entries()) {
      const events = await clients[i % 2]!.getEvents(rid);
      expect(events.map((e) => e.sequence)).toEqual(events.map((_, n) => n + 1));
      const stored = new Set(events.map((e) => e.event_id ?? contentOf(e)));
      for (const marker of acknowledged.get(rid)!) expect(stored).toContain(marker);
      // Event ids are idempotent: each log event once, even when its post was retried across the restart.
      const logIds = events.filter((e) => e.event_type === "log").map((e) => e.event_id);
      expect(new Set(logIds).size).toBe(logIds.length);
      expect(logIds).toHaveLength(8);
    }
  });
});

/** The user message a proxied call's `model_request` event recorded. */
function contentOf(event: Event): string | undefined {
  const request = (event.data as { request?: { messages?: { content?: string }[] } }).request;
  return request?.messages?.[0]?.content;
}
