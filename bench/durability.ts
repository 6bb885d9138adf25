/**
 * @module Durability bench: (1) a kill -9 run — `arclight gateway` children on one SQLite file are killed
 * with SIGKILL at random moments while agents post events and make proxied calls (stream and non-stream); after each
 * kill the file is checked for everything the agents were told had succeeded (event POST 200, non-stream 200, a
 * stream that ended with `[DONE]`). Prints acknowledged / acknowledged-but-lost counts (goal: 0 lost).
 * (2) gateway latency while another process holds the SQLite write lock (`BEGIN IMMEDIATE`): `/healthz` p50/max
 * with and without the lock held, and the wait of an event POST that arrives while the lock is held for 2 s.
 *
 * `npx tsx bench/durability.ts [--rounds N] [--agents N]` (defaults 10 rounds, 16 agents). Prints the load average:
 * the figures depend on how loaded the machine is.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import { startGatewayChild } from "../src/run/gateway-child.js";
import { SqliteStore } from "../src/store/sqlite.js";
import { holdSqliteLock } from "../src/store/testing/sqlite-lock-holder.js";

const KEY = "bench-key";
const args = process.argv.slice(2);
const flag = (name: string, fallback: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const ROUNDS = flag("--rounds", 10);
const AGENTS = flag("--agents", 16);

/** What the agents were told succeeded. */
interface Acked {
  eventIds: Set<string>;
  callIds: Set<string>;
  streamIds: Set<string>;
}

async function startGateway(path: string): Promise<{ child: ChildProcess; url: string }> {
  const gateway = await startGatewayChild(path, "policy", [], KEY);
  return { child: gateway.process, url: gateway.url };
}

const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

async function post(url: string, body: unknown, extra: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: "POST", headers: { ...headers, ...extra }, body: JSON.stringify(body) });
}

/** One agent: events, non-stream and stream calls in turn until `stop`; records what it was told succeeded. */
async function agent(url: string, rid: string, tag: string, acked: Acked, stop: { done: boolean }): Promise<void> {
  const proxy = `${url}/proxy/rollout/${rid}/attempt/0/mode/train/openai/v1/chat/completions`;
  for (let n = 0; !stop.done; n++) {
    const id = `${tag}-${n}`;
    try {
      if (n % 3 === 0) {
        const event = { event_type: "log", event_id: id, data: { n } };
        const res = await post(`${url}/api/rollouts/${rid}/attempt/0/events`, event);
        if (res.status === 200) acked.eventIds.add(id);
      } else if (n % 3 === 1) {
        const res = await post(
          proxy,
          { model: "m", messages: [{ role: "user", content: id }] },
          { "x-request-id": id },
        );
        if (res.status === 200 && typeof ((await res.json()) as { id?: unknown }).id === "string")
          acked.callIds.add(id);
      } else {
        const body = { model: "m", stream: true, messages: [{ role: "user", content: id }] };
        const res = await post(proxy, body, { "x-request-id": id });
        if ((await res.text()).includes("data: [DONE]")) acked.streamIds.add(id);
      }
    } catch {
      // The gateway died under the call: nothing was acknowledged.
    }
  }
}

/** Counts acknowledged items missing from the file. */
async function lostOf(path: string, acked: Acked): Promise<{ events: number; calls: number; streams: number }> {
  const store = SqliteStore.open(path);
  try {
    const eventIds = new Set<string>();
    const requestIds = new Set<string>();
    for (const rollout of await store.listRollouts({ limit: 10_000 })) {
      for (const event of await store.listEvents(rollout.rollout_id)) {
        if (event.event_id) eventIds.add(event.event_id);
        const agentRequestId = (event.data as { agent_request_id?: string }).agent_request_id;
        if (event.event_type === "model_request" && agentRequestId) requestIds.add(agentRequestId);
      }
    }
    const missing = (ids: Set<string>, present: Set<string>) => [...ids].filter((id) => !present.has(id)).length;
    return {
      events: missing(acked.eventIds, eventIds),
      calls: missing(acked.callIds, requestIds),
      streams: missing(acked.streamIds, requestIds),
    };
  } finally {
    await store.close();
  }
}

async function killRun(fake: FakeVllm): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "arclight-bench-durability-"));
  const path = join(dir, "gateway.db");
  const acked: Acked = { eventIds: new Set(), callIds: new Set(), streamIds: new Set() };
  let lost = { events: 0, calls: 0, streams: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const { child, url } = await startGateway(path);
    await post(`${url}/api/models`, [{ model: "policy", endpoint: fake.url }]);
    const rids = Array.from({ length: AGENTS }, (_, i) => `r${round}-${i}`);
    await post(
      `${url}/api/rollouts`,
      rids.map((rollout_id) => ({ rollout_id, input: {} })),
    );
    const stop = { done: false };
    const agents = rids.map((rid, i) => agent(url, rid, `${round}-${i}`, acked, stop));
    await delay(300 + Math.random() * 700);
    child.kill("SIGKILL");
    await once(child, "exit");
    stop.done = true;
    await Promise.all(agents);
    lost = await lostOf(path, acked);
  }
  rmSync(dir, { recursive: true, force: true });
  const total = acked.eventIds.size + acked.callIds.size + acked.streamIds.size;
  console.log(
    `kill -9 run: ${ROUNDS} gateway kills, ${AGENTS} agents; acknowledged ${total} ` +
      `(events ${acked.eventIds.size}, non-stream calls ${acked.callIds.size}, streams ${acked.streamIds.size}); ` +
      `acknowledged but lost: events ${lost.events}, calls ${lost.calls}, streams ${lost.streams}`,
  );
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

async function healthLatencies(url: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const startedAt = performance.now();
    await fetch(`${url}/healthz`);
    out.push(performance.now() - startedAt);
    await delay(20);
  }
  return out;
}

async function lockRun(fake: FakeVllm): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "arclight-bench-lock-"));
  const path = join(dir, "gateway.db");
  const { child, url } = await startGateway(path);
  await post(`${url}/api/models`, [{ model: "policy", endpoint: fake.url }]);
  await post(`${url}/api/rollouts`, [{ rollout_id: "r", input: {} }]);
  const free = await healthLatencies(url, 50);
  const holder = await holdSqliteLock(path);
  const startedAt = performance.now();
  const eventPost = post(`${url}/api/rollouts/r/attempt/0/events`, { event_type: "log", data: {} }).then((r) => ({
    status: r.status,
    ms: performance.now() - startedAt,
  }));
  const locked = await healthLatencies(url, 50); // 50 /healthz calls while the lock is held
  const heldMs = performance.now() - startedAt;
  await holder.release();
  const event = await eventPost;
  child.kill("SIGKILL");
  await once(child, "exit");
  rmSync(dir, { recursive: true, force: true });
  const fmt = (v: number[]) => `p50 ${percentile(v, 0.5).toFixed(1)} ms, max ${Math.max(...v).toFixed(1)} ms`;
  console.log(`/healthz, lock free: ${fmt(free)}; another process holding BEGIN IMMEDIATE: ${fmt(locked)}`);
  console.log(
    `event POST sent as the lock was taken, lock held ${heldMs.toFixed(0)} ms: ${event.status} after ${event.ms.toFixed(0)} ms`,
  );
}

const fake = await FakeVllm.start({ content: "a b c d e f" });
console.log(
  `cores ${availableParallelism()}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
await lockRun(fake);
await killRun(fake);
console.log(
  `load average after: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}`,
);
await fake.close();
