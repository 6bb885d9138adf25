/**
 * @module Store throughput and latency: events appended per second (single and batches of 100, ~2 KB model_request
 * payloads), rollouts created per second, latency to read a rollout's 200 events, and peak RSS — for the memory
 * store and SQLite (temp file, synchronous=NORMAL; also FULL for comparison). Each store runs in its own process so
 * its peak RSS is its own. Append phases run REPEATS times; the best and the median are printed, plus events per
 * CPU-second of the bench process (less sensitive to other load on a shared machine). "concurrent single" is what the
 * proxy does: 64 callers each appending one event at a time to its own rollout, all in flight at once (the SQLite
 * store group-commits the appends called in one event-loop turn).
 * Targets (2-core machine): SQLite batched >= 20k events/s, single >= 2k events/s.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type EventCreate, EventCreateSchema, RolloutCreateSchema } from "../src/protocol/index.js";
import { MemoryStore } from "../src/store/memory.js";
import { SqliteStore } from "../src/store/sqlite.js";
import type { Store } from "../src/store/store.js";

const ROLLOUTS_CREATED = 2_000;
const SINGLE_EVENTS = 3_000;
const BATCHES = 200;
const BATCH_SIZE = 100;
const REPEATS = 3;
const READ_EVENTS = 200;
const READS = 200;
const TARGET_BATCHED_EPS = 20_000;
const TARGET_SINGLE_EPS = 2_000;

/** Rate of one timed phase: per wall-clock second and per CPU-second of this process. */
interface Rate {
  perS: number;
  perCpuS: number;
}

/** Figures one store process reports, as JSON on its last stdout line. */
interface Figures {
  createdPerS: number;
  single: Rate[];
  concurrent: Rate[];
  batched: Rate[];
  readP50Ms: number;
  readP99Ms: number;
  peakRssMiB: number;
}

/** A model_request-like event of about 2 KB JSON. */
function modelRequestEvent(i: number): EventCreate {
  const content = "The capital of France is Paris. ".repeat(16);
  return EventCreateSchema.parse({
    event_type: "model_request",
    data: {
      model: "policy",
      model_version: 3,
      request: { model: "policy", messages: [{ role: "user", content: `question ${i}: ${content}` }], logprobs: true },
      response: {
        id: `chatcmpl-${i}`,
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
        prompt_token_ids: Array.from({ length: 60 }, (_, k) => (k * 31 + i) % 50_000),
        token_ids: Array.from({ length: 40 }, (_, k) => (k * 17 + i) % 50_000),
      },
      latency_ms: 123.4,
      http_status: 200,
      status: "ok",
      retry_count: 0,
      usage: { prompt_tokens: 60, completion_tokens: 40, total_tokens: 100 },
      finish_reason: "stop",
      server: { model: "policy", endpoint: "http://127.0.0.1:8000/v1", version: 3 },
    },
  });
}

/** Times `count` units of work done by `run`. */
async function timed(count: number, run: () => Promise<void>): Promise<Rate> {
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  await run();
  const used = process.cpuUsage(cpu);
  return {
    perS: count / (Number(process.hrtime.bigint() - start) / 1e9),
    perCpuS: count / ((used.user + used.system) / 1e6),
  };
}

async function runningRollouts(store: Store, n: number, tag: string): Promise<string[]> {
  const made = await store.createRollouts(
    Array.from({ length: n }, (_, i) => RolloutCreateSchema.parse({ rollout_id: `${tag}-${i}`, input: { i } })),
  );
  for (const r of made) await store.patchRollout(r.rollout_id, { status: { state: "running" } });
  return made.map((r) => r.rollout_id);
}

/** Appends `total` events in calls of `batchSize`, round-robin over 20 fresh running rollouts. */
async function appendRate(store: Store, total: number, batchSize: number, tag: string): Promise<Rate> {
  const ids = await runningRollouts(store, 20, tag);
  const batch = Array.from({ length: batchSize }, (_, i) => modelRequestEvent(i));
  return timed(total, async () => {
    for (let call = 0; call < total / batchSize; call++) await store.appendEvents(ids[call % 20]!, "0", batch);
  });
}

const CONCURRENT_CALLERS = 64;

/** Appends `total` single events from 64 concurrent callers, each awaiting its own appends to its own rollout. */
async function concurrentRate(store: Store, total: number, tag: string): Promise<Rate> {
  const ids = await runningRollouts(store, CONCURRENT_CALLERS, tag);
  const event = [modelRequestEvent(0)];
  const perCaller = Math.ceil(total / CONCURRENT_CALLERS);
  return timed(perCaller * CONCURRENT_CALLERS, async () => {
    await Promise.all(
      ids.map(async (id) => {
        for (let i = 0; i < perCaller; i++) await store.appendEvents(id, "0", event);
      }),
    );
  });
}

/** Runs every measurement against one store (in this process). */
async function measure(store: Store, singleEvents: number): Promise<Figures> {
  const created = await timed(ROLLOUTS_CREATED, async () => {
    for (let i = 0; i < ROLLOUTS_CREATED; i++) {
      await store.createRollouts([RolloutCreateSchema.parse({ input: { question: `q${i}`, data_id: `d${i % 50}` } })]);
    }
  });
  const single: Rate[] = [];
  const concurrent: Rate[] = [];
  const batched: Rate[] = [];
  for (let rep = 0; rep < REPEATS; rep++) {
    single.push(await appendRate(store, singleEvents, 1, `single-${rep}`));
    concurrent.push(await concurrentRate(store, singleEvents * 2, `concurrent-${rep}`));
    batched.push(await appendRate(store, BATCHES * BATCH_SIZE, BATCH_SIZE, `batched-${rep}`));
  }
  const [reader] = await runningRollouts(store, 1, "read");
  await store.appendEvents(
    reader!,
    "0",
    Array.from({ length: READ_EVENTS }, (_, i) => modelRequestEvent(i)),
  );
  const latenciesMs: number[] = [];
  for (let i = 0; i < READS; i++) {
    const start = process.hrtime.bigint();
    const read = await store.listEvents(reader!);
    latenciesMs.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (read.length !== READ_EVENTS) throw new Error(`read ${read.length} events, expected ${READ_EVENTS}`);
  }
  latenciesMs.sort((a, b) => a - b);
  return {
    createdPerS: created.perS,
    single,
    concurrent,
    batched,
    readP50Ms: latenciesMs[Math.floor(READS * 0.5)]!,
    readP99Ms: latenciesMs[Math.floor(READS * 0.99)]!,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
  };
}

/** Child mode: `store.ts --child memory|sqlite-normal|sqlite-full` prints one JSON line of figures. */
async function child(kind: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "arclight-bench-"));
  try {
    const store =
      kind === "memory"
        ? new MemoryStore()
        : SqliteStore.open(join(dir, "bench.db"), { synchronous: kind === "sqlite-full" ? "FULL" : "NORMAL" });
    // FULL fsyncs every commit: fewer single appends keep the bench short.
    const figures = await measure(store, kind === "sqlite-full" ? SINGLE_EVENTS / 6 : SINGLE_EVENTS);
    await store.close();
    console.log(JSON.stringify(figures));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function runChild(kind: string): Figures {
  const self = fileURLToPath(import.meta.url);
  const result = spawnSync(process.execPath, ["--import", "tsx", self, "--child", kind], { encoding: "utf8" });
  if (result.status !== 0) throw new Error(`bench child ${kind} failed: ${result.stderr}`);
  return JSON.parse(result.stdout.trim().split("\n").pop()!) as Figures;
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const best = (rates: Rate[]) => Math.max(...rates.map((r) => r.perS));
const median = (rates: Rate[]) => rates.map((r) => r.perS).sort((a, b) => a - b)[Math.floor(rates.length / 2)]!;
const describeRates = (rates: Rate[]) =>
  `best ${fmt(best(rates))}/s, median ${fmt(median(rates))}/s, ` +
  `${fmt(Math.max(...rates.map((r) => r.perCpuS)))}/CPU-s`;

function main(): void {
  const payloadBytes = JSON.stringify(modelRequestEvent(0).data).length;
  console.log(
    `setup: ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), node ${process.version}, one process per store, ` +
      `payload ${payloadBytes} B JSON; ${ROLLOUTS_CREATED} rollout creates (1 per call); append phases x${REPEATS}: ` +
      `${SINGLE_EVENTS} single appends (${SINGLE_EVENTS / 6} for FULL), twice as many from ${CONCURRENT_CALLERS} ` +
      `concurrent callers, ${BATCHES} batches x ${BATCH_SIZE}; ` +
      `${READS} reads of ${READ_EVENTS} events; load average at start ${loadavg()[0]!.toFixed(2)}`,
  );
  const rows: [string, Figures][] = [
    ["memory", runChild("memory")],
    ["sqlite (synchronous=NORMAL, default)", runChild("sqlite-normal")],
    ["sqlite (synchronous=FULL)", runChild("sqlite-full")],
  ];
  for (const [name, f] of rows) {
    console.log(`${name}:`);
    console.log(`  rollouts created      ${fmt(f.createdPerS)}/s`);
    console.log(`  events single         ${describeRates(f.single)}`);
    console.log(`  concurrent single     ${describeRates(f.concurrent)}`);
    console.log(`  events batched(100)   ${describeRates(f.batched)}`);
    console.log(`  read 200 events       p50 ${f.readP50Ms.toFixed(2)} ms, p99 ${f.readP99Ms.toFixed(2)} ms`);
    console.log(`  peak RSS              ${f.peakRssMiB.toFixed(0)} MiB`);
  }
  console.log(
    `load average at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")} (other processes share the cores)`,
  );
  const sqlite = rows[1]![1];
  const ratio = (rates: Rate[], target: number) =>
    `best ${fmt(best(rates))}/s (median ${fmt(median(rates))}/s) vs target >= ${fmt(target)}/s: ` +
    `ratio ${(best(rates) / target).toFixed(2)}x (median ${(median(rates) / target).toFixed(2)}x) ` +
    (best(rates) >= target ? "met" : "MISSED");
  console.log(`target SQLite batched: ${ratio(sqlite.batched, TARGET_BATCHED_EPS)}`);
  console.log(`target SQLite single:  ${ratio(sqlite.single, TARGET_SINGLE_EPS)}`);
}

const childIndex = process.argv.indexOf("--child");
if (childIndex >= 0) await child(process.argv[childIndex + 1]!);
else main();
