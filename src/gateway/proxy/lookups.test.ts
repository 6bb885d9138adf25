import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type ModelRequestData, RolloutCreateSchema } from "../../protocol/index.js";
import { MemoryStore } from "../../store/memory.js";
import { CROSS_PROCESS_POLL_MS, SqliteStore } from "../../store/sqlite.js";
import type { Store } from "../../store/store.js";
import { FakeVllm } from "../testing/fake-vllm.js";
import { agentCall, chatRequest } from "../testing/proxy-client.js";
import { type ProxyHarness, startProxyHarness } from "../testing/proxy-harness.js";
import { ProxyLookups } from "./lookups.js";

const dir = mkdtempSync(join(tmpdir(), "arclight-lookups-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(store: Store = new MemoryStore()) {
  const fake = await FakeVllm.start();
  const h = await startProxyHarness({ store, models: [{ model: "policy", endpoint: fake.url, version: 3 }] });
  cleanups.push(async () => {
    await h.close();
    await fake.close();
  });
  return { h, fake, rid: await h.newRollout() };
}

async function versions(h: ProxyHarness, rid: string): Promise<number[]> {
  const events = await h.store.listEvents(rid, { eventType: "model_request" });
  return events.map((e) => (e.data as ModelRequestData).model_version);
}

const call = (h: ProxyHarness, rid: string, attemptId = "0") =>
  agentCall(h, rid, "chat/completions", chatRequest(), { attemptId });

describe("proxy lookups: cached between calls, never stale", () => {
  it("records a newly registered policy version on the very next call", async () => {
    const { h, fake, rid } = await setup();
    expect((await call(h, rid)).status).toBe(200);
    await h.store.upsertModels([{ model: "policy", endpoint: fake.url, version: 4 }]);
    expect((await call(h, rid)).status).toBe(200);
    expect(await versions(h, rid)).toEqual([3, 4]);
  });

  it("answers 409 on the very next call once the rollout has finished", async () => {
    const { h, fake, rid } = await setup();
    await h.store.patchRollout(rid, { status: { state: "running" } });
    expect((await call(h, rid)).status).toBe(200);
    await h.store.patchRollout(rid, { status: { state: "succeeded" } });
    const late = await call(h, rid);
    expect(late.status).toBe(409);
    expect(late.json).toMatchObject({ code: "rollout_finished" });
    expect(fake.received).toHaveLength(1);
  });

  it("moves to a retried rollout's new attempt on the very next call: the old one gets 409", async () => {
    const { h } = await setup();
    const [rollout] = await h.store.createRollouts([
      RolloutCreateSchema.parse({ rollout_id: "retried", input: {}, config: { max_attempts: 2 } }),
    ]);
    const rid = rollout!.rollout_id;
    await h.store.patchRollout(rid, { status: { state: "running" } });
    expect((await call(h, rid, "0")).status).toBe(200);
    await h.store.patchRollout(rid, { status: { state: "failed" } }); // retried: attempt "1" is current
    expect((await call(h, rid, "0")).json).toMatchObject({ code: "stale_attempt" });
    expect((await call(h, rid, "1")).status).toBe(200);
  });

  it("serves the very next call once an endpoint is registered after a 503", async () => {
    const { h, fake, rid } = await setup();
    await h.store.deleteModels();
    expect((await call(h, rid)).status).toBe(503);
    await h.store.upsertModels([{ model: "policy", endpoint: fake.url, version: 5 }]);
    expect((await call(h, rid)).status).toBe(200);
    expect(await versions(h, rid)).toEqual([5]);
  });

  it("sees writes of another process's connection to the same SQLite file within CROSS_PROCESS_POLL_MS", async () => {
    const path = join(dir, "shared.db");
    const { h, fake, rid } = await setup(SqliteStore.open(path));
    const other = SqliteStore.open(path); // stands for a second process: its own connection
    cleanups.push(() => other.close());
    await h.store.patchRollout(rid, { status: { state: "running" } });
    expect((await call(h, rid)).status).toBe(200);
    await other.upsertModels([{ model: "policy", endpoint: fake.url, version: 8 }]);
    await sleep(CROSS_PROCESS_POLL_MS);
    expect((await call(h, rid)).status).toBe(200);
    await other.patchRollout(rid, { status: { state: "failed" } });
    await sleep(CROSS_PROCESS_POLL_MS);
    expect((await call(h, rid)).json).toMatchObject({ code: "rollout_finished" });
    expect(await versions(h, rid)).toEqual([3, 8]);
  });
});

describe("ProxyLookups", () => {
  /** A MemoryStore counting reads, to tell cache hits from misses. */
  function countingStore() {
    const store = new MemoryStore();
    const reads = { getRollout: 0, listModels: 0 };
    const getRollout = store.getRollout.bind(store);
    const listModels = store.listModels.bind(store);
    store.getRollout = async (id) => {
      reads.getRollout++;
      return getRollout(id);
    };
    store.listModels = async (model) => {
      reads.listModels++;
      return listModels(model);
    };
    return { store, reads };
  }

  it("reads the store once per rollout and model while nothing is written, again after a write", async () => {
    const { store, reads } = countingStore();
    const lookups = new ProxyLookups(store);
    await store.createRollouts([RolloutCreateSchema.parse({ rollout_id: "r", input: {} })]);
    await store.upsertModels([{ model: "m", endpoint: "http://h/v1", version: 1 }]);
    for (let i = 0; i < 3; i++) {
      lookups.refresh();
      expect(await lookups.rollout("r")).toEqual({ lastAttemptId: null, state: "queuing" });
      expect(await lookups.endpointsOf("m")).toEqual([{ model: "m", endpoint: "http://h/v1", version: 1 }]);
    }
    await store.appendEvents("r", "0", [{ event_type: "log", data: {} }]); // appends leave the caches valid
    lookups.refresh();
    await lookups.rollout("r");
    expect(reads).toEqual({ getRollout: 1, listModels: 1 });
    await store.patchRollout("r", { status: { state: "running" } });
    lookups.refresh();
    expect(await lookups.rollout("r")).toEqual({ lastAttemptId: null, state: "running" });
    await lookups.endpointsOf("m");
    expect(reads).toEqual({ getRollout: 2, listModels: 2 });
  });

  it("caches neither unknown rollouts nor models without endpoints", async () => {
    const { store, reads } = countingStore();
    const lookups = new ProxyLookups(store);
    lookups.refresh();
    expect(await lookups.rollout("ghost")).toBeUndefined();
    expect(await lookups.rollout("ghost")).toBeUndefined();
    expect(await lookups.endpointsOf("none")).toEqual([]);
    expect(await lookups.endpointsOf("none")).toEqual([]);
    expect(reads).toEqual({ getRollout: 2, listModels: 2 });
  });
});
