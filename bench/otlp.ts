/**
 * @module OTLP ingest throughput: spans stored per second through the real gateway (`POST /v1/traces` on 127.0.0.1,
 * SQLite store in a temp file), protobuf batches of 512 spans, each span with 8 attributes and one event, batches
 * spread over 8 rollouts. Request bodies are encoded before the clock starts (encoding is the agent's cost).
 * Sequential (one exporter) and 4 concurrent exporters; each REPEATS times, best and median printed.
 * Target (2-core machine): >= 20k spans/s.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type protobuf from "protobufjs";
import { buildApp } from "../src/gateway/app.js";
import { gatewayConfig } from "../src/gateway/config.js";
import { loadOtlpTraceSchema, type OtlpTraceSchema } from "../src/gateway/otlp/schema.js";
import { RolloutCreateSchema } from "../src/protocol/index.js";
import { SqliteStore } from "../src/store/sqlite.js";

const BATCH_SPANS = 512;
const BATCHES = 60;
const ROLLOUTS = 8;
const REPEATS = 3;
const TARGET_SPANS_PER_S = 20_000;

let idCounter = 0;
function id(bytes: number): Buffer {
  const buf = Buffer.alloc(bytes);
  buf.writeUInt32BE(++idCounter, bytes - 4);
  buf.writeUInt32BE(process.pid, 0);
  return buf;
}

/** One protobuf `ExportTraceServiceRequest` of 512 spans for one rollout: a root and its children, like an agent's. */
function encodeBatch(schema: OtlpTraceSchema, rolloutId: string): Uint8Array {
  const traceId = id(16);
  const rootId = id(8);
  const start = BigInt(Date.now()) * 1_000_000n;
  const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
  const spans = Array.from({ length: BATCH_SPANS }, (_, i) => ({
    traceId,
    spanId: i === 0 ? rootId : id(8),
    parentSpanId: i === 0 ? undefined : rootId,
    name: i === 0 ? "agent.run" : `execute_tool search`,
    kind: 1,
    startTimeUnixNano: (start + BigInt(i) * 1000n).toString(),
    endTimeUnixNano: (start + BigInt(i) * 1000n + 500n).toString(),
    attributes: [
      str("gen_ai.operation.name", "execute_tool"),
      str("gen_ai.tool.name", "search"),
      str("query", `what is the capital of country number ${i}?`),
      str("result", "Paris is the capital and largest city of France."),
      { key: "hits", value: { intValue: i } },
      { key: "cached", value: { boolValue: i % 2 === 0 } },
      { key: "score", value: { doubleValue: i / 7 } },
      str("gen_ai.agent.name", "solver"),
    ],
    events: [{ timeUnixNano: start.toString(), name: "retrieved", attributes: [str("source", "index")] }],
    status: { code: 1 },
  }));
  const request = {
    resourceSpans: [
      {
        resource: {
          attributes: [
            str("service.name", "bench-agent"),
            str("arclight.rollout_id", rolloutId),
            str("arclight.attempt_id", "0"),
          ],
        },
        scopeSpans: [{ scope: { name: "bench", version: "1" }, spans }],
      },
    ],
  };
  return schema.request.encode(schema.request.fromObject(request) as protobuf.Message).finish();
}

async function post(url: string, body: Uint8Array): Promise<void> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-protobuf", authorization: "Bearer bench" },
    body,
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`POST /v1/traces answered ${res.status}`);
}

/** Posts `bodies` with `concurrency` exporters; @returns spans per second */
async function run(url: string, bodies: Uint8Array[], concurrency: number): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < bodies.length) await post(url, bodies[next++]!);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return (bodies.length * BATCH_SPANS) / seconds;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "arclight-bench-otlp-"));
  const store = SqliteStore.open(join(dir, "gateway.db"));
  const app = buildApp({ store, config: gatewayConfig({ key: "bench" }) });
  const base = await app.listen({ host: "127.0.0.1", port: 0 });
  const rollouts = Array.from({ length: ROLLOUTS }, (_, i) => ({ rollout_id: `bench-${i}`, input: {} }));
  await store.createRollouts(rollouts.map((r) => RolloutCreateSchema.parse(r)));
  const schema = loadOtlpTraceSchema();
  const load = loadavg()[0]!.toFixed(2);
  console.log(
    `setup: ${cpus().length} cores, SQLite store (temp file), ${BATCHES} protobuf batches of ${BATCH_SPANS} spans ` +
      `(~${Math.round(encodeBatch(schema, "x").length / 1024)} KiB each) over ${ROLLOUTS} rollouts, ${REPEATS} repeats; ` +
      `load average at start ${load}`,
  );
  try {
    for (const concurrency of [1, 4]) {
      const rates: number[] = [];
      for (let repeat = 0; repeat < REPEATS; repeat++) {
        const bodies = Array.from({ length: BATCHES }, (_, i) => encodeBatch(schema, `bench-${i % ROLLOUTS}`));
        rates.push(await run(`${base}/v1/traces`, bodies, concurrency));
      }
      rates.sort((a, b) => b - a);
      const best = rates[0]!;
      const median = rates[Math.floor(rates.length / 2)]!;
      console.log(
        `${concurrency} exporter(s): best ${Math.round(best)} spans/s, median ${Math.round(median)} spans/s; ` +
          `target ${TARGET_SPANS_PER_S} spans/s, ratio ${(median / TARGET_SPANS_PER_S).toFixed(2)}`,
      );
    }
    console.log(`stored events: ${await store.countEvents()}; load average at end ${loadavg()[0]!.toFixed(2)}`);
  } finally {
    await app.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
