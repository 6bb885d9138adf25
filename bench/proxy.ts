/**
 * @module Proxy overhead bench: 64 concurrent clients against (a) the fake vLLM upstream directly and (b) the same
 * upstream through the capturing proxy (event recorded for every call). Prints added p50/p99 latency and the
 * throughput ratio. Targets: added p50 <= 1 ms, throughput >= 50% of direct.
 *
 * The upstream and the gateway each run in their own child process, so neither shares an event loop with the load
 * generator. This file is both the main script and the child (`BENCH_ROLE` set by the parent).
 *
 * `--store sqlite` (default; the gateway's real default, a fresh file in a temp folder) or `--store memory`;
 * `--body small` (default) or `--body large` (a 24-turn, ~24 kB chat body).
 */

import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Agent } from "undici";

const CONCURRENCY = 64;
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5000);
const WARMUP_MS = 1000;
/** The agent's request: `--body small` (default) one short message; `--body large` a 24-turn chat of about 24 kB. */
function requestBody(): string {
  const i = process.argv.indexOf("--body");
  const size = i === -1 ? "small" : process.argv[i + 1];
  if (size === "small") {
    return JSON.stringify({ model: "agent", messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
  }
  if (size !== "large") throw new Error(`--body must be small or large, got ${size}`);
  const turn = "The quick brown fox jumps over the lazy dog; ".repeat(22);
  const messages = Array.from({ length: 24 }, (_, k) => ({ role: k % 2 ? "assistant" : "user", content: turn }));
  return JSON.stringify({ model: "agent", messages, max_tokens: 4, seed: 7, top_p: 0.95 });
}
const BODY = requestBody();

async function runWorker(): Promise<void> {
  const { FakeVllm } = await import("../src/gateway/testing/fake-vllm.js");
  const { startProxyHarness } = await import("../src/gateway/testing/proxy-harness.js");
  const role = process.env.BENCH_ROLE as "upstream" | "gateway";
  const send = (message: unknown): void => void process.send!(message);
  if (role === "upstream") {
    const fake = await FakeVllm.start({ content: "ok" });
    // Keep the fake's memory flat: the bench does not need the received bodies.
    setInterval(() => fake.received.splice(0), 200).unref();
    send({ url: fake.url });
    process.on("message", (message) => {
      if (message === "exit") process.exit(0);
      send({ cpu: process.cpuUsage() });
    });
    return;
  }
  const dbPath = process.env.BENCH_SQLITE_PATH;
  const { SqliteStore } = await import("../src/store/sqlite.js");
  const store = dbPath ? SqliteStore.open(dbPath) : undefined;
  const models = [{ model: "policy", endpoint: process.env.BENCH_UPSTREAM_URL! }];
  const h = await startProxyHarness({ models, ...(store ? { store } : {}) });
  const rids = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => h.newRollout(`ro-bench-${i}`)));
  const storeName = dbPath ? `sqlite (SqliteStore, WAL, synchronous=NORMAL, ${dbPath})` : "memory (MemoryStore)";
  send({ base: h.openaiBase("ROLLOUT"), rids, key: h.key, store: storeName });
  process.on("message", async (message) => {
    if (message === "exit") process.exit(0);
    else if (message === "cpu") send({ cpu: process.cpuUsage() });
    else send({ events: await h.store.countEvents() });
  });
}

function startWorker(env: Record<string, string>): Promise<{ worker: ChildProcess; info: Record<string, unknown> }> {
  const worker = fork(fileURLToPath(import.meta.url), [], {
    execArgv: [
      "--import",
      "tsx",
      ...(env.BENCH_ROLE === "gateway" && process.env.BENCH_PROF ? ["--cpu-prof", "--cpu-prof-dir=/tmp/prof"] : []),
    ],
    env: { ...process.env, ...env },
  });
  return new Promise((resolve, reject) => {
    worker.once("message", (info) => resolve({ worker, info: info as Record<string, unknown> }));
    worker.once("error", reject);
  });
}

/** Asks a worker for its `process.cpuUsage()`; @returns user + system CPU time, µs. */
async function cpuMicros(worker: ChildProcess): Promise<number> {
  worker.send("cpu");
  const { cpu } = await new Promise<{ cpu: NodeJS.CpuUsage }>((r) => worker.once("message", r));
  return cpu.user + cpu.system;
}

/** CPU time used so far by each of the three processes, µs. */
interface CpuSnapshot {
  loadgen: number;
  upstream: number;
  gateway: number;
}

/**
 * CPU per call of each process (warm-up included in both the time and the count), and the throughput the machine's
 * cores would allow if CPU were the only limit: steadier than calls/s on a shared machine, and the basis of the
 * Little's-law reading in the README.
 */
function printCpu(cpu0: CpuSnapshot, cpu1: CpuSnapshot, cpu2: CpuSnapshot, direct: Run, proxied: Run): void {
  const per = (from: CpuSnapshot, to: CpuSnapshot, run: Run) => ({
    loadgen: (to.loadgen - from.loadgen) / run.allRequests,
    upstream: (to.upstream - from.upstream) / run.allRequests,
    gateway: (to.gateway - from.gateway) / run.allRequests,
  });
  const d = per(cpu0, cpu1, direct);
  const p = per(cpu1, cpu2, proxied);
  const us = (v: number): string => v.toFixed(0);
  console.log(
    `CPU per call, µs: direct run load ${us(d.loadgen)} + upstream ${us(d.upstream)} = ${us(d.loadgen + d.upstream)}; ` +
      `proxied run load ${us(p.loadgen)} + upstream ${us(p.upstream)} + gateway ${us(p.gateway)} = ` +
      `${us(p.loadgen + p.upstream + p.gateway)}`,
  );
  const cores = availableParallelism();
  const ceiling = (micros: number): number => (cores * 1e6) / micros;
  const directMax = ceiling(d.loadgen + d.upstream);
  const proxiedMax = ceiling(p.loadgen + p.upstream + p.gateway);
  console.log(
    `CPU-bound ceiling on ${cores} cores: direct ${directMax.toFixed(0)} calls/s, proxied ${proxiedMax.toFixed(0)} ` +
      `calls/s, ratio ${((proxiedMax / directMax) * 100).toFixed(1)}%`,
  );
}

interface Run {
  latenciesMs: number[];
  requests: number;
  /** Every call answered, warm-up included. */
  allRequests: number;
  seconds: number;
}

/** 64 clients, each sending its next call when the previous one is answered, for the bench duration. */
async function load(
  urlOf: (client: number) => string,
  headers: Record<string, string>,
  concurrency = CONCURRENCY,
): Promise<Run> {
  const dispatcher = new Agent({ connections: concurrency, keepAliveTimeout: 30_000 });
  const latenciesMs: number[] = [];
  let measuring = false;
  let requests = 0;
  let allRequests = 0;
  const call = async (client: number): Promise<void> => {
    const started = performance.now();
    const res = await dispatcher.request({
      origin: new URL(urlOf(client)).origin,
      path: new URL(urlOf(client)).pathname,
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: BODY,
    });
    await res.body.arrayBuffer();
    if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
    allRequests++;
    if (measuring) {
      latenciesMs.push(performance.now() - started);
      requests++;
    }
  };
  let stop = false;
  const clients = Array.from({ length: concurrency }, async (_, client) => {
    while (!stop) await call(client);
  });
  await new Promise((r) => setTimeout(r, WARMUP_MS));
  measuring = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, DURATION_MS));
  measuring = false;
  const seconds = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(clients);
  await dispatcher.close();
  return { latenciesMs, requests, allRequests, seconds };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The `--store` flag: `sqlite` (default) or `memory`. */
function storeFlag(): "sqlite" | "memory" {
  const i = process.argv.indexOf("--store");
  const value = i === -1 ? "sqlite" : process.argv[i + 1];
  if (value !== "sqlite" && value !== "memory") throw new Error(`--store must be sqlite or memory, got ${value}`);
  return value;
}

async function main(): Promise<void> {
  const storeKind = storeFlag();
  const dir = storeKind === "sqlite" ? mkdtempSync(join(tmpdir(), "arclight-bench-proxy-")) : undefined;
  try {
    await compare(dir ? { BENCH_SQLITE_PATH: join(dir, "gateway.db") } : {});
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

async function compare(storeEnv: Record<string, string>): Promise<void> {
  const upstream = await startWorker({ BENCH_ROLE: "upstream" });
  const upstreamUrl = upstream.info.url as string;
  const gateway = await startWorker({ BENCH_ROLE: "gateway", BENCH_UPSTREAM_URL: upstreamUrl, ...storeEnv });
  const { base, rids, key, store } = gateway.info as { base: string; rids: string[]; key: string; store: string };
  console.log(
    `setup: ${availableParallelism()} cores, ${CONCURRENCY} concurrent clients, ${DURATION_MS} ms per run after ` +
      `${WARMUP_MS} ms warm-up; non-stream chat calls; upstream, gateway and load generator in separate processes; ` +
      `store: ${store}; request body ${BODY.length} bytes; node ${process.version}`,
  );
  const cpu = async (): Promise<CpuSnapshot> => ({
    loadgen: process.cpuUsage().user + process.cpuUsage().system,
    upstream: await cpuMicros(upstream.worker),
    gateway: await cpuMicros(gateway.worker),
  });
  const cpu0 = await cpu();
  const direct = await load(() => `${upstreamUrl}/chat/completions`, {});
  const cpu1 = await cpu();
  const proxied = await load((c) => `${base.replace("ROLLOUT", rids[c]!)}/chat/completions`, {
    authorization: `Bearer ${key}`,
  });
  const cpu2 = await cpu();
  // Same pair with one client: the proxy's own cost, without queueing behind 63 other calls.
  const directOne = await load(() => `${upstreamUrl}/chat/completions`, {}, 1);
  const proxiedOne = await load(
    (c) => `${base.replace("ROLLOUT", rids[c]!)}/chat/completions`,
    { authorization: `Bearer ${key}` },
    1,
  );
  gateway.worker.send("count");
  const { events } = await new Promise<{ events: number }>((r) => gateway.worker.once("message", r));
  const row = (name: string, run: Run): string =>
    `${name.padEnd(8)} p50 ${percentile(run.latenciesMs, 50).toFixed(3)} ms  p99 ${percentile(run.latenciesMs, 99).toFixed(3)} ms  ` +
    `${(run.requests / run.seconds).toFixed(0)} calls/s (${run.requests} calls)`;
  console.log(row("direct", direct));
  console.log(row("proxied", proxied));
  const addedP50 = percentile(proxied.latenciesMs, 50) - percentile(direct.latenciesMs, 50);
  const addedP99 = percentile(proxied.latenciesMs, 99) - percentile(direct.latenciesMs, 99);
  const ratio = proxied.requests / proxied.seconds / (direct.requests / direct.seconds);
  const addedOne = percentile(proxiedOne.latenciesMs, 50) - percentile(directOne.latenciesMs, 50);
  console.log(row("direct1", directOne));
  console.log(row("proxied1", proxiedOne));
  console.log(`added latency with 1 client: p50 ${addedOne.toFixed(3)} ms`);
  console.log(`events recorded by the gateway: ${events} (warm-up included)`);
  printCpu(cpu0, cpu1, cpu2, direct, proxied);
  console.log(`added latency: p50 ${addedP50.toFixed(3)} ms (target <= 1 ms), p99 ${addedP99.toFixed(3)} ms`);
  console.log(`throughput ratio proxied/direct: ${(ratio * 100).toFixed(1)}% (target >= 50%)`);
  upstream.worker.send("exit");
  gateway.worker.send("exit");
  await once(gateway.worker, "exit");
}

if (process.env.BENCH_ROLE === undefined) await main();
else await runWorker();
