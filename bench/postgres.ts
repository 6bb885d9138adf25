/**
 * @module Gateway throughput on PostgreSQL vs SQLite, through real `arclight gateway` processes over HTTP: events
 * ingested per second (32 clients posting one event at a time, and batches of 20), and proxied chat calls per second
 * (32 agents, a fake vLLM upstream in this process), with one gateway and with two gateways sharing the store. The
 * PostgreSQL server is a throw-away cluster with default durability (fsync, synchronous_commit on); SQLite runs with
 * the store's default synchronous=NORMAL. Clients spread over the replicas round-robin; gateways log at warn.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import { startServerChild } from "../src/process/server-child.js";
import { PostgresServer } from "../src/testing/postgres-server.js";

const CLIENTS = 32;
const PHASE_MS = 5_000;
const BATCH = 20;
const KEY = "bench-key";
const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const TEXT = "The capital of France is Paris. ".repeat(32); // ~1 KB per event
const dispatcher = new Agent({ connections: CLIENTS * 2, keepAliveTimeout: 30_000 });

/** POSTs JSON and returns the status (the body is drained). */
async function post(url: string, body: unknown): Promise<number> {
  const res = await request(url, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    dispatcher,
  });
  await res.body.dump();
  return res.statusCode;
}

/** Runs `CLIENTS` loops of `step(client, n)` for {@link PHASE_MS}. @returns units done per second */
async function phase(step: (client: number, n: number) => Promise<number>): Promise<number> {
  const deadline = Date.now() + PHASE_MS;
  const start = performance.now();
  let done = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let n = 0; Date.now() < deadline; n++) {
        try {
          done += await step(client, n);
        } catch {
          failed++;
        }
      }
    }),
  );
  if (failed > 0) console.log(`  (${failed} failed calls)`);
  return done / ((performance.now() - start) / 1000);
}

/** Starts `replicas` gateways on `store`. @returns their URLs and a stop function */
async function gateways(store: string, replicas: number): Promise<{ urls: string[]; stop(): Promise<void> }> {
  const children = await Promise.all(
    Array.from({ length: replicas }, () =>
      startServerChild({
        argv: [process.execPath, "--import", "tsx", MAIN, "gateway", "--port", "0", "--log-level", "warn"],
        env: { ARCLIGHT_STORE: store, ARCLIGHT_KEY: KEY, NODE_ENV: "production" },
        urlPattern: /listening on (http:\/\/\S+)/,
        what: "gateway",
        startTimeoutMs: 120_000,
      }),
    ),
  );
  return {
    urls: children.map((c) => c.url),
    stop: async () => void (await Promise.all(children.map((c) => c.stop()))),
  };
}

interface Row {
  store: string;
  replicas: number;
  single: number;
  batched: number;
  proxied: number;
}

/** Measures one store with `replicas` gateways. */
async function measure(name: string, store: string, replicas: number, upstream: string): Promise<Row> {
  const { urls, stop } = await gateways(store, replicas);
  try {
    const url = (client: number) => urls[client % urls.length]!;
    const ids = Array.from({ length: CLIENTS }, (_, i) => `bench-${replicas}-${i}`);
    await post(
      `${urls[0]}/api/rollouts`,
      ids.map((rollout_id) => ({ rollout_id, input: { rollout_id } })),
    );
    await post(`${urls[0]}/api/models`, [{ model: "policy", endpoint: upstream, version: 1 }]);
    const event = (n: number) => ({ event_type: "log", data: { n, text: TEXT } });
    const events = (c: number) => `${url(c)}/api/rollouts/${ids[c]}/attempt/0/events`;
    const single = await phase(async (c, n) => ((await post(events(c), event(n))) === 200 ? 1 : 0));
    const batch = (n: number) => Array.from({ length: BATCH }, (_, k) => event(n * BATCH + k));
    const batched = await phase(async (c, n) => ((await post(events(c), batch(n))) === 200 ? BATCH : 0));
    const chat = { model: "policy", messages: [{ role: "user", content: "What is the capital of France?" }] };
    const proxy = (c: number) => `${url(c)}/proxy/rollout/${ids[c]}/attempt/0/mode/train/openai/v1/chat/completions`;
    const proxied = await phase(async (c) => ((await post(proxy(c), chat)) === 200 ? 1 : 0));
    const row = { store: name, replicas, single, batched, proxied };
    console.log(
      `  ${name} x${replicas}: single ${single.toFixed(0)} ev/s, batched ${batched.toFixed(0)} ev/s, ` +
        `proxied ${proxied.toFixed(0)} calls/s (load ${loadavg()[0]!.toFixed(2)})`,
    );
    return row;
  } finally {
    await stop();
  }
}

async function main(): Promise<void> {
  console.log(
    `setup: ${cpus().length} cores, ${CLIENTS} clients, ${PHASE_MS / 1000} s per phase, batches of ${BATCH}, ` +
      `~1 KB events; load average before: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
  );
  const pgServer = await PostgresServer.start({ fast: false });
  const fake = await FakeVllm.start();
  const dir = mkdtempSync(join(tmpdir(), "arclight-bench-pg-"));
  const rows: Row[] = [];
  try {
    for (const replicas of [1, 2]) {
      rows.push(await measure("sqlite", `sqlite:${join(dir, `r${replicas}.db`)}`, replicas, fake.url));
      rows.push(await measure("postgres", await pgServer.createDatabase(), replicas, fake.url));
    }
  } finally {
    await fake.close();
    pgServer.stop();
    rmSync(dir, { recursive: true, force: true });
    await dispatcher.close();
  }
  console.log("\nstore     replicas  single ev/s  batched ev/s  proxied calls/s   (postgres / sqlite)");
  for (const row of rows) {
    const base = rows.find((r) => r.store === "sqlite" && r.replicas === row.replicas)!;
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    const ratios =
      row.store === "postgres"
        ? `(${ratio(row.single, base.single)} / ${ratio(row.batched, base.batched)} / ${ratio(row.proxied, base.proxied)})`
        : "";
    console.log(
      `${row.store.padEnd(9)} ${String(row.replicas).padStart(8)}  ${row.single.toFixed(0).padStart(11)}  ` +
        `${row.batched.toFixed(0).padStart(12)}  ${row.proxied.toFixed(0).padStart(15)}   ${ratios}`,
    );
  }
  console.log(
    `load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
}

await main();
