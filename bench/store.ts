/**
 * @module Store throughput and latency: events appended per second (single and batches of 100, ~2 KB model_request
 * payloads), rollouts created per second, latency to read a rollout's 200 events, and peak RSS — for the memory
 * store and SQLite (temp file, synchronous=NORMAL; single appends also with FULL). Each store runs in its own
 * process so its peak RSS is its own. Targets (issue 2): SQLite batched >= 20k events/s, single >= 2k events/s.
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
const SINGLE_EVENTS = 4_000;
const BATCHES = 300;
const BATCH_SIZE = 100;
const READ_EVENTS = 200;
const READS = 200;
const TARGET_BATCHED_EPS = 20_000;
const TARGET_SINGLE_EPS = 2_000;

/** Figures one store process reports, as JSON on its last stdout line. */
interface Figures {
  createdPerS: number;
  singlePerS: number;
  batchedPerS: number;
  /** Single and batched appends per CPU-second of this process (less sensitive to other load on the machine). */
  singlePerCpuS: number;
  batchedPerCpuS: number;
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

function perSecond(count: number, startNs: bigint): number {
  return count / (Number(process.hrtime.bigint() - startNs) / 1e9);
}

function perCpuSecond(count: number, start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return count / ((used.user + used.system) / 1e6);
}

async function runningRollouts(store: Store, n: number, tag: string): Promise<string[]> {
  const made = await store.createRollouts(
    Array.from({ length: n }, (_, i) => RolloutCreateSchema.parse({ rollout_id: `${tag}-${i}`, input: { i } })),
  );
  for (const r of made) await store.patchRollout(r.rollout_id, { status: { state: "running" } });
  return made.map((r) => r.rollout_id);
}

/** Runs every measurement against one store (in this process). */
async function measure(store: Store, singleEvents: number): Promise<Figures> {
  let t = process.hrtime.bigint();
  for (let i = 0; i < ROLLOUTS_CREATED; i++) {
    await store.createRollouts([RolloutCreateSchema.parse({ input: { question: `q${i}`, data_id: `d${i % 50}` } })]);
  }
  const createdPerS = perSecond(ROLLOUTS_CREATED, t);

  // Single appends, round-robin over 20 running rollouts (one call, one transaction per event).
  const single = await runningRollouts(store, 20, "single");
  const events = Array.from({ length: 100 }, (_, i) => modelRequestEvent(i));
  t = process.hrtime.bigint();
  let cpu = process.cpuUsage();
  for (let i = 0; i < singleEvents; i++) await store.appendEvents(single[i % 20]!, "0", [events[i % 100]!]);
  const singlePerS = perSecond(singleEvents, t);
  const singlePerCpuS = perCpuSecond(singleEvents, cpu);

  const batched = await runningRollouts(store, 20, "batched");
  t = process.hrtime.bigint();
  cpu = process.cpuUsage();
  for (let b = 0; b < BATCHES; b++) await store.appendEvents(batched[b % 20]!, "0", events.slice(0, BATCH_SIZE));
  const batchedPerS = perSecond(BATCHES * BATCH_SIZE, t);
  const batchedPerCpuS = perCpuSecond(BATCHES * BATCH_SIZE, cpu);

  const [reader] = await runningRollouts(store, 1, "read");
  await store.appendEvents(reader!, "0", [...events, ...events].slice(0, READ_EVENTS));
  const latenciesMs: number[] = [];
  for (let i = 0; i < READS; i++) {
    const start = process.hrtime.bigint();
    const read = await store.listEvents(reader!);
    latenciesMs.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (read.length !== READ_EVENTS) throw new Error(`read ${read.length} events, expected ${READ_EVENTS}`);
  }
  latenciesMs.sort((a, b) => a - b);
  return {
    createdPerS,
    singlePerS,
    batchedPerS,
    singlePerCpuS,
    batchedPerCpuS,
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
    const figures = await measure(store, kind === "sqlite-full" ? SINGLE_EVENTS / 4 : SINGLE_EVENTS);
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

function main(): void {
  const payloadBytes = JSON.stringify(modelRequestEvent(0).data).length;
  console.log(
    `setup: ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), node ${process.version}, one process per store, ` +
      `payload ${payloadBytes} B JSON; ${ROLLOUTS_CREATED} rollout creates (1 per call), ${SINGLE_EVENTS} single ` +
      `appends (${SINGLE_EVENTS / 4} for FULL), ${BATCHES} batches x ${BATCH_SIZE}, ${READS} reads of ${READ_EVENTS} events`,
  );
  const rows: [string, Figures][] = [
    ["memory", runChild("memory")],
    ["sqlite (synchronous=NORMAL, default)", runChild("sqlite-normal")],
    ["sqlite (synchronous=FULL)", runChild("sqlite-full")],
  ];
  const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
  for (const [name, f] of rows) {
    console.log(
      `${name}: rollouts created ${fmt(f.createdPerS)}/s | events single ${fmt(f.singlePerS)}/s ` +
        `(${fmt(f.singlePerCpuS)}/CPU-s) | events batched(100) ${fmt(f.batchedPerS)}/s ` +
        `(${fmt(f.batchedPerCpuS)}/CPU-s) | read 200 events p50 ${f.readP50Ms.toFixed(2)} ms ` +
        `p99 ${f.readP99Ms.toFixed(2)} ms | peak RSS ${f.peakRssMiB.toFixed(0)} MiB`,
    );
  }
  const sqlite = rows[1]![1];
  const ratio = (value: number, target: number) =>
    `${fmt(value)}/s vs target >= ${fmt(target)}/s: ratio ${(value / target).toFixed(2)}x ` +
    (value >= target ? "(met)" : "(MISSED)");
  console.log(
    `load average at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")} (other processes share the cores)`,
  );
  console.log(`target SQLite batched: ${ratio(sqlite.batchedPerS, TARGET_BATCHED_EPS)}`);
  console.log(`target SQLite single:  ${ratio(sqlite.singlePerS, TARGET_SINGLE_EPS)}`);
}

const childIndex = process.argv.indexOf("--child");
if (childIndex >= 0) await child(process.argv[childIndex + 1]!);
else main();
