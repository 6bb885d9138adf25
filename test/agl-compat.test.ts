/**
 * Agent Lightning v1.0 clients against the real gateway (HTTP on loopback), on both stores: attempt rules, late
 * events, no-op patches and the wire shapes AGL code reads. Each case names the AGL behaviour it reproduces.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import { startTestGateway, type TestGateway } from "../src/gateway/testing/serve.js";
import type { Event, Rollout } from "../src/protocol/index.js";
import { MemoryStore } from "../src/store/memory.js";
import { SqliteStore } from "../src/store/sqlite.js";
import type { Store } from "../src/store/store.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const STORES: [string, () => Store][] = [
  ["memory", () => new MemoryStore()],
  [
    "sqlite",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "arclight-agl-compat-"));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      return SqliteStore.open(join(dir, "gateway.db"));
    },
  ],
];

async function start(makeStore: () => Store): Promise<TestGateway> {
  const gw = await startTestGateway({ model_name: "policy" }, makeStore());
  cleanups.push(() => gw.close());
  return gw;
}

async function json<T>(res: Promise<Response>): Promise<T> {
  return (await (await res).json()) as T;
}

/** The value of an unlabelled Prometheus sample (or one with `labels`), 0 when absent. */
async function metric(gw: TestGateway, name: string, labels = ""): Promise<number> {
  const text = await (await gw.call("GET", "/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

describe.each(STORES)("AGL v1.0 attempt and late-write rules (%s store)", (_name, makeStore) => {
  it("a hook's reward posted after the rollout succeeded is stored late, read back and counted", async () => {
    // AGL trainers flush on_succeeded hook rewards after the rollout is terminal; AGL stores them.
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", last_attempt_id: "0" } });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "succeeded", last_attempt_id: "0" } });
    const reward = await gw.call("POST", "/api/rollouts/r/attempt/0/events", {
      event_type: "reward",
      data: { value: 0.9 },
    });
    expect(reward.status).toBe(200);
    expect(await reward.json()).toMatchObject({ event_type: "reward", late: true, data: { value: 0.9 } });
    const triplets = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events?format=triplet"));
    expect(triplets.map((e) => e.data)).toEqual([{ value: 0.9 }]);
    expect(await metric(gw, "arclight_late_events_total")).toBe(1);
  });

  it("an event to an attempt id never seen is stored and listed, without changing the attempt GET events reads", async () => {
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running" } });
    await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "log", data: { n: 0 } });
    const foreign = await gw.call("POST", "/api/rollouts/r/attempt/judge-1/events", { event_type: "log", data: {} });
    expect(foreign.status).toBe(200);
    const detail = await json<{ rollout: Rollout; attempts: string[] }>(gw.call("GET", "/api/rollouts/r"));
    expect(detail.attempts).toEqual(["0", "judge-1"]);
    expect(detail.rollout.status.last_attempt_id).toBeNull();
    const read = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events"));
    expect(read.map((e) => e.attempt_id)).toEqual(["0"]);
  });

  it("a PATCH moving last_attempt_id makes GET events read the new attempt; the old one is refused 409", async () => {
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", last_attempt_id: "0" } });
    await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "log", data: { n: 0 } });
    const moved = await gw.call("PATCH", "/api/rollouts/r", { status: { last_attempt_id: "second" } });
    expect(moved.status).toBe(200);
    await gw.call("POST", "/api/rollouts/r/attempt/second/events", { event_type: "log", data: { n: 1 } });
    const read = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events"));
    expect(read.map((e) => e.data.n)).toEqual([1]);
    const stale = await gw.call("POST", "/api/rollouts/r/attempt/0/events", {
      event_type: "reward",
      data: { value: 1 },
    });
    expect(stale.status).toBe(409);
    expect(await stale.json()).toMatchObject({ code: "stale_attempt", attempt_id: "0", current_attempt_id: "second" });
    const route = '{route="/api/rollouts/:id/attempt/:aid/events"}';
    expect(await metric(gw, "arclight_stale_attempt_writes_total", route)).toBe(1);
  });

  it("a superseded attempt's late report can neither finish the rollout nor write to it", async () => {
    // Attempt 0 failed and was retried as attempt 1; attempt 0's helper then reports success and a reward.
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {}, config: { max_attempts: 2 } }]);
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", last_attempt_id: "0" } });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "failed", last_attempt_id: "0" } });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", last_attempt_id: "1" } });
    const finish = await gw.call("PATCH", "/api/rollouts/r", { status: { state: "succeeded", last_attempt_id: "0" } });
    expect(finish.status).toBe(409);
    expect(await finish.json()).toMatchObject({ code: "stale_attempt", current_attempt_id: "1" });
    const reward = await gw.call("POST", "/api/rollouts/r/attempt/0/events", {
      event_type: "reward",
      data: { value: 1 },
    });
    expect(reward.status).toBe(409);
    const rollout = await json<{ rollout: Rollout }>(gw.call("GET", "/api/rollouts/r"));
    expect(rollout.rollout.status).toMatchObject({ state: "running", last_attempt_id: "1" });
    expect(await metric(gw, "arclight_stale_attempt_writes_total", '{route="/api/rollouts/:id"}')).toBe(1);
  });

  it("a PATCH to the state the rollout already has changes nothing: 200, same version", async () => {
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    const first = await json<Rollout>(gw.call("PATCH", "/api/rollouts/r", { status: { state: "running" } }));
    const again = await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running" } });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(first);
    expect(first.status.version).toBe(2);
  });

  it("a queuing rollout (agent started before the patch to running) takes model calls and rewards in attempt 0", async () => {
    // AGL's local controller spawns the agent, then patches running; its k8s controller patches running only when
    // it sees the Job run. So the first writes of a normal attempt reach a rollout that is still queuing.
    const fake = await FakeVllm.start();
    cleanups.push(() => fake.close());
    const gw = await start(makeStore);
    await gw.call("POST", "/api/models", [{ model: "policy", endpoint: fake.url }]);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {}, config: { max_attempts: 2 } }]);
    const base = `/proxy/rollout/r/attempt/0/mode/train/openai/v1/chat/completions`;
    const call = await gw.call("POST", base, { model: "x", messages: [{ role: "user", content: "hi" }] });
    expect(call.status).toBe(200);
    const reward = await gw.call("POST", "/api/rollouts/r/attempt/0/events", {
      event_type: "reward",
      data: { value: 1 },
    });
    expect(reward.status).toBe(200);
    const events = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events"));
    expect(events.map((e) => [e.event_type, e.attempt_id])).toEqual([
      ["model_request", "0"],
      ["reward", "0"],
    ]);
    // Once attempt 0 has been retried, the queuing rollout's writes go to attempt 1; attempt 0 is refused.
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", last_attempt_id: "0" } });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "failed" } });
    const stale = await gw.call("POST", base, { model: "x", messages: [{ role: "user", content: "hi" }] });
    expect(stale.status).toBe(409);
    expect(await stale.json()).toMatchObject({ code: "stale_attempt", current_attempt_id: "1" });
    expect(fake.received).toHaveLength(1);
  });
});
