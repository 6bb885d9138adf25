/**
 * @module Benchmark: events/s posted over HTTP to `POST /api/rollouts/{id}/attempt/0/events` by 32 concurrent
 * keep-alive clients (undici Pool) for a fixed duration, against `arclight gateway` running as its own process.
 * Prints setup, throughput, p50/p99 latency, the 5k events/s target and the ratio.
 *
 * Usage: `npx tsx bench/gateway-api.ts [--seconds 10] [--clients 32] [--store memory|sqlite] [--batch 1]`
 * (`--batch N` posts lists of N events per request; the headline figure is one event per POST).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { openStore } from "../src/store/open.js";

const TARGET_EVENTS_PER_S = 5000;
const WARMUP_S = 1;
const KEY = "bench-key";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "10" },
    clients: { type: "string", default: "32" },
    store: { type: "string", default: "sqlite" },
    batch: { type: "string", default: "1" },
  },
});
const durationS = Number(values.seconds);
const clients = Number(values.clients);
const batch = Number(values.batch);

/** The store spec to run: SQLite in a temp dir when this build has it, else memory (said in the output). */
async function chooseStore(dir: string): Promise<{ spec: string; note: string }> {
  if (values.store === "memory") return { spec: "memory", note: "memory (asked)" };
  const spec = `sqlite:${join(dir, "bench.db")}`;
  try {
    await (await openStore(spec)).close();
    return { spec, note: "sqlite (temp file)" };
  } catch (err) {
    return { spec: "memory", note: `memory (SQLite unavailable in this build: ${(err as Error).message})` };
  }
}

/** Starts `arclight gateway` on a free port and resolves with its URL. */
async function startGateway(storeSpec: string): Promise<{ child: ChildProcess; url: string }> {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const args = ["--import", "tsx", "src/cli/main.ts", "gateway", "--port", "0", "--log-level", "warn"];
  const child = spawn(process.execPath, [...args, "--store", storeSpec], {
    cwd: root,
    env: { ...process.env, ARCLIGHT_KEY: KEY },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk) => {
      out += String(chunk);
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`gateway exited with ${code} before listening`)));
  });
  child.stdout?.resume();
  return { child, url };
}

/** Sends one JSON request through the pool. @returns the status code */
async function request(pool: Pool, method: "POST" | "GET", path: string, body?: unknown): Promise<number> {
  const res = await pool.request({
    method,
    path,
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await res.body.dump();
  return res.statusCode;
}

/** The value at quantile `q` of sorted samples. */
function quantile(sorted: Float64Array, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** The body of one POST: a single event, or a list of `batch` events. */
function eventBody(step: number): unknown {
  const event = (i: number) => ({ event_type: "log", data: { step: i, message: "tool call ok" } });
  return batch === 1 ? event(step) : Array.from({ length: batch }, (_, i) => event(step * batch + i));
}

/** One client: posts events to its own rollout until `endAt`, recording latencies after `measureFrom`. */
async function client(pool: Pool, rolloutId: string, measureFrom: number, endAt: number, latenciesMs: number[]) {
  const path = `/api/rollouts/${rolloutId}/attempt/0/events`;
  let failures = 0;
  for (let i = 0; performance.now() < endAt; i++) {
    const started = performance.now();
    const status = await request(pool, "POST", path, eventBody(i));
    if (status !== 200) failures++;
    else if (started >= measureFrom) latenciesMs.push(performance.now() - started);
  }
  return failures;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "arclight-bench-gw-"));
  const store = await chooseStore(dir);
  const { child, url } = await startGateway(store.spec);
  const pool = new Pool(url, { connections: clients, pipelining: 1 });
  try {
    const rollouts = Array.from({ length: clients }, (_, i) => ({ rollout_id: `bench-${i}`, input: { i } }));
    if ((await request(pool, "POST", "/api/rollouts", rollouts)) !== 201) throw new Error("rollout create failed");
    console.log(
      `setup: ${cpus()[0]?.model ?? "cpu"} x${availableParallelism()}, node ${process.version}, load average ${loadavg()[0]?.toFixed(1)} at start`,
    );
    console.log(
      `setup: ${clients} keep-alive clients (undici Pool), ${durationS} s measured after ${WARMUP_S} s warm-up`,
    );
    console.log(
      `setup: gateway as a child process (arclight gateway), store ${store.note}, ${batch} event(s) per POST`,
    );
    const start = performance.now();
    const measureFrom = start + WARMUP_S * 1000;
    const endAt = measureFrom + durationS * 1000;
    const latencies: number[][] = rollouts.map(() => []);
    const failures = await Promise.all(
      rollouts.map((r, i) => client(pool, r.rollout_id, measureFrom, endAt, latencies[i]!)),
    );
    const all = Float64Array.from(latencies.flat()).sort();
    const eventsPerS = (all.length * batch) / durationS;
    const failed = failures.reduce((a, b) => a + b, 0);
    console.log(`requests (measured): ${all.length}, events: ${all.length * batch}, failed requests: ${failed}`);
    console.log(`throughput: ${eventsPerS.toFixed(0)} events/s`);
    console.log(`latency per POST: p50 ${quantile(all, 0.5).toFixed(2)} ms, p99 ${quantile(all, 0.99).toFixed(2)} ms`);
    console.log(
      `baseline: target ${TARGET_EVENTS_PER_S} events/s; ratio ${(eventsPerS / TARGET_EVENTS_PER_S).toFixed(2)}x`,
    );
  } finally {
    await pool.close();
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
