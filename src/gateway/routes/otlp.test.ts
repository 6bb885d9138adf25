import { gzipSync } from "node:zlib";
import { context, trace } from "@opentelemetry/api";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from "@opentelemetry/sdk-trace-node";
import { afterEach, describe, expect, it } from "vitest";
import type { Event, SpanData } from "../../protocol/index.js";
import { loadOtlpTraceSchema } from "../otlp/schema.js";
import { startTestGateway, type TestGateway } from "../testing/serve.js";

let gw: TestGateway;
afterEach(async () => {
  await gw?.close();
});

async function withRollouts(ids: string[] = ["r"]): Promise<void> {
  gw = await startTestGateway();
  const res = await gw.call(
    "POST",
    "/api/rollouts",
    ids.map((rollout_id) => ({ rollout_id, input: {} })),
  );
  expect(res.status).toBe(201);
}

type ExporterKind = "protobuf" | "json" | "protobuf+gzip";

function exporter(kind: ExporterKind): SpanExporter {
  const config = { url: `${gw.url}/v1/traces`, headers: { authorization: "Bearer test-key" } };
  if (kind === "json") return new JsonExporter(config);
  // `compression` takes the exporter package's CompressionAlgorithm enum, whose value is the string "gzip".
  return new ProtoExporter(kind === "protobuf" ? config : { ...config, ...({ compression: "gzip" } as object) });
}

/** Runs `body` with a real SDK tracer exporting to the gateway, then flushes and shuts the provider down. */
async function traced(
  kind: ExporterKind,
  resource: Record<string, string>,
  body: (tracer: ReturnType<NodeTracerProvider["getTracer"]>) => void,
): Promise<void> {
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": "test-agent", ...resource }),
    spanProcessors: [new BatchSpanProcessor(exporter(kind), { maxExportBatchSize: 512, scheduledDelayMillis: 60_000 })],
  });
  body(provider.getTracer("agent-test", "1.2.3"));
  await provider.forceFlush();
  await provider.shutdown();
}

async function spanEvents(rolloutId = "r"): Promise<(Event & { data: SpanData })[]> {
  const events = await gw.store.listEvents(rolloutId, { eventType: "span" });
  return events as (Event & { data: SpanData })[];
}

/** A root span and a child, linked through an explicit context (no global context manager is registered). */
function toolTree(tracer: ReturnType<NodeTracerProvider["getTracer"]>): void {
  const root = tracer.startSpan("agent.run", { attributes: { "gen_ai.agent.name": "solver" } });
  const tool = tracer.startSpan(
    "tool.search",
    { attributes: { query: "x", hits: 3, ok: true, tags: ["a", "b"] } },
    trace.setSpan(context.active(), root),
  );
  tool.addEvent("cache-miss", { key: "x" });
  tool.end();
  root.end();
}

describe.each<ExporterKind>(["protobuf", "json", "protobuf+gzip"])(
  "POST /v1/traces from the real %s exporter",
  (kind) => {
    it("stores each span as a span event of the rollout named by the resource attributes", async () => {
      await withRollouts();
      await traced(kind, { "arclight.rollout_id": "r", "arclight.attempt_id": "0" }, toolTree);
      const events = await spanEvents();
      expect(events.map((e) => e.data.name).sort()).toEqual(["agent.run", "tool.search"]);
      const root = events.find((e) => e.data.name === "agent.run")!.data;
      const tool = events.find((e) => e.data.name === "tool.search")!.data;
      expect(tool.parent_span_id).toBe(root.span_id);
      expect(tool.trace_id).toBe(root.trace_id);
      expect(root.parent_span_id).toBeNull();
      expect(tool.attributes).toEqual({ query: "x", hits: 3, ok: true, tags: ["a", "b"] });
      expect(tool.events).toEqual([expect.objectContaining({ name: "cache-miss", attributes: { key: "x" } })]);
      expect(root.attributes["gen_ai.agent.name"]).toBe("solver");
      expect(root.resource["service.name"]).toBe("test-agent");
      expect(root.scope).toEqual({ name: "agent-test", version: "1.2.3" });
      expect(root.kind).toBe("internal");
      expect(BigInt(root.end_time_unix_nano)).toBeGreaterThanOrEqual(BigInt(root.start_time_unix_nano));
      // Nanosecond timestamps are kept exactly: more digits than a double holds.
      expect(root.start_time_unix_nano).toMatch(/^\d{19}$/);
      expect(events[0]!.attempt_id).toBe("0");
    });
  },
);

describe("POST /v1/traces attribution", () => {
  it("rejects spans that name no rollout through partial success and counts them in /metrics", async () => {
    await withRollouts();
    const schema = loadOtlpTraceSchema();
    // A raw request, to read the reply the exporter only logs.
    await traced("protobuf", {}, (tracer) => tracer.startSpan("orphan").end());
    expect(await gw.store.countEvents()).toBe(0);
    const body = protobufRequest([{ name: "orphan" }, { name: "kept", attributes: { "arclight.rollout_id": "r" } }]);
    const res = await fetch(`${gw.url}/v1/traces`, {
      method: "POST",
      headers: { authorization: "Bearer test-key", "content-type": "application/x-protobuf" },
      body,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-protobuf");
    const answer = new Uint8Array(await res.arrayBuffer());
    const reply = schema.response.toObject(schema.response.decode(answer), { longs: Number }) as {
      partialSuccess?: { rejectedSpans: number; errorMessage: string };
    };
    expect(reply.partialSuccess?.rejectedSpans).toBe(1);
    expect(reply.partialSuccess?.errorMessage).toContain("arclight.rollout_id");
    expect((await spanEvents()).map((e) => e.data.name)).toEqual(["kept"]);
    const metrics = await (await gw.call("GET", "/metrics")).text();
    expect(metrics).toContain('arclight_otlp_spans_total{result="rejected",reason="unattributed"} 2');
    expect(metrics).toContain('arclight_otlp_spans_total{result="accepted",reason=""} 1');
  });

  it("lets a span attribute override the resource's rollout and fills in the current attempt", async () => {
    await withRollouts(["a", "b"]);
    await traced("json", { "arclight.rollout_id": "a" }, (tracer) => {
      tracer.startSpan("to-a").end();
      tracer.startSpan("to-b", { attributes: { "arclight.rollout_id": "b" } }).end();
    });
    expect((await spanEvents("a")).map((e) => [e.data.name, e.attempt_id])).toEqual([["to-a", "0"]]);
    expect((await spanEvents("b")).map((e) => [e.data.name, e.attempt_id])).toEqual([["to-b", "0"]]);
  });

  it("rejects the spans of an unknown rollout and stores the others of the same batch", async () => {
    await withRollouts();
    const res = await postJson(
      jsonRequest([
        { name: "lost", attributes: { "arclight.rollout_id": "nope" } },
        { name: "kept", attributes: { "arclight.rollout_id": "r" } },
      ]),
    );
    expect(res.status).toBe(200);
    const reply = (await res.json()) as { partialSuccess: { rejectedSpans: string; errorMessage: string } };
    expect(reply.partialSuccess.rejectedSpans).toBe("1");
    expect(reply.partialSuccess.errorMessage).toContain("Rollout nope not found");
    expect((await spanEvents()).map((e) => e.data.name)).toEqual(["kept"]);
  });

  it("rejects spans aimed at a superseded attempt and stores those of the current one", async () => {
    gw = await startTestGateway();
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {}, config: { max_attempts: 2 } }]);
    // A failed first attempt with an attempt left: the rollout is re-queued as attempt "1"; "0" is superseded.
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running" } });
    const retried = await gw.call("PATCH", "/api/rollouts/r", { status: { state: "failed" } });
    expect(((await retried.json()) as { status: { last_attempt_id: string } }).status.last_attempt_id).toBe("1");
    const res = await postJson(
      jsonRequest([
        { name: "old", attributes: { "arclight.rollout_id": "r", "arclight.attempt_id": "0" } },
        { name: "new", attributes: { "arclight.rollout_id": "r", "arclight.attempt_id": "1" } },
      ]),
    );
    const reply = (await res.json()) as { partialSuccess: { rejectedSpans: string; errorMessage: string } };
    expect(reply.partialSuccess.rejectedSpans).toBe("1");
    expect(reply.partialSuccess.errorMessage).toMatch(/^1 span\(s\) of rollout r: /);
    expect((await spanEvents()).map((e) => [e.data.name, e.attempt_id])).toEqual([["new", "1"]]);
    const metrics = await (await gw.call("GET", "/metrics")).text();
    expect(metrics).toContain('arclight_otlp_spans_total{result="rejected",reason="stale_attempt"} 1');
    expect(metrics).toContain('arclight_stale_attempt_writes_total{route="/v1/traces"} 1');
  });

  it("follows the store's late-write rule for a finished rollout: its spans are stored with late: true", async () => {
    await withRollouts();
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running" } });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "succeeded" } });
    const res = await postJson(jsonRequest([{ name: "late", attributes: { "arclight.rollout_id": "r" } }]));
    expect(res.status).toBe(200);
    const [span] = await spanEvents();
    expect(span).toMatchObject({ late: true, data: { name: "late" } });
    expect(await res.json()).toEqual({});
    const metrics = await (await gw.call("GET", "/metrics")).text();
    expect(metrics).toContain("arclight_late_events_total 1");
  });

  it("stores a re-sent batch once (exporter retries are idempotent)", async () => {
    await withRollouts();
    const body = jsonRequest([{ name: "once", attributes: { "arclight.rollout_id": "r" } }]);
    expect((await postJson(body)).status).toBe(200);
    expect((await postJson(body)).status).toBe(200);
    expect((await spanEvents()).map((e) => e.data.name)).toEqual(["once"]);
  });

  it("keeps request order within a batch", async () => {
    await withRollouts();
    const names = Array.from({ length: 20 }, (_, i) => `s${i}`);
    await postJson(jsonRequest(names.map((name) => ({ name, attributes: { "arclight.rollout_id": "r" } }))));
    expect((await spanEvents()).map((e) => e.data.name)).toEqual(names);
  });
});

describe("POST /v1/traces bad input stores nothing", () => {
  it.each([
    ["a protobuf body that is not a message", "application/x-protobuf", Buffer.from([0x0a, 0xff, 0xff, 0xff]), 400],
    ["invalid JSON", "application/json", Buffer.from("{nope"), 400],
    [
      "JSON of the wrong shape",
      "application/json",
      Buffer.from('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz"}]}]}]}'),
      422,
    ],
    [
      "a bad AnyValue",
      "application/json",
      Buffer.from(
        JSON.stringify(jsonRequest([{ name: "x", attributes: { "arclight.rollout_id": "r" } }])).replace(
          '{"stringValue":"r"}',
          '{"weird":1}',
        ),
      ),
      400,
    ],
    ["another content type", "text/plain", Buffer.from("hello"), 415],
  ])("%s → %i", async (_what, contentType, body, status) => {
    await withRollouts();
    const res = await fetch(`${gw.url}/v1/traces`, {
      method: "POST",
      headers: { authorization: "Bearer test-key", "content-type": contentType },
      body,
    });
    expect(res.status).toBe(status);
    expect(((await res.json()) as { detail: unknown }).detail).toBeTruthy();
    expect(await gw.store.countEvents()).toBe(0);
  });

  it("refuses a gzip body that inflates past the body limit with 413", async () => {
    gw = await startTestGateway({ body_limit_bytes: 64 * 1024 });
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    const huge = JSON.stringify(
      jsonRequest([{ name: "x".repeat(200_000), attributes: { "arclight.rollout_id": "r" } }]),
    );
    const res = await fetch(`${gw.url}/v1/traces`, {
      method: "POST",
      headers: { authorization: "Bearer test-key", "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync(huge),
    });
    expect(res.status).toBe(413);
    expect(await gw.store.countEvents()).toBe(0);
  });

  it("refuses a body over the limit with 413", async () => {
    gw = await startTestGateway({ body_limit_bytes: 1024 });
    const res = await fetch(`${gw.url}/v1/traces`, {
      method: "POST",
      headers: { authorization: "Bearer test-key", "content-type": "application/x-protobuf" },
      body: Buffer.alloc(4096, 1),
    });
    expect(res.status).toBe(413);
  });

  it("refuses an unknown content-encoding with 415", async () => {
    await withRollouts();
    const res = await fetch(`${gw.url}/v1/traces`, {
      method: "POST",
      headers: { authorization: "Bearer test-key", "content-type": "application/json", "content-encoding": "br" },
      body: "{}",
    });
    expect(res.status).toBe(415);
  });

  it("needs the gateway key", async () => {
    await withRollouts();
    const res = await fetch(`${gw.url}/v1/traces`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(401);
  });
});

interface TestSpan {
  name: string;
  attributes?: Record<string, string>;
}

let nextId = 1;
function ids(): { traceId: string; spanId: string } {
  const n = nextId++;
  return { traceId: n.toString(16).padStart(32, "0"), spanId: n.toString(16).padStart(16, "0") };
}

/** A hand-written OTLP/JSON body, for cases the SDK does not produce (unknown rollouts, bad values). */
function jsonRequest(spans: TestSpan[]): unknown {
  return {
    resourceSpans: [
      {
        resource: { attributes: [] },
        scopeSpans: [
          {
            scope: { name: "t" },
            spans: spans.map((s) => ({
              ...ids(),
              name: s.name,
              kind: 1,
              startTimeUnixNano: "1700000000000000001",
              endTimeUnixNano: "1700000000000000002",
              attributes: Object.entries(s.attributes ?? {}).map(([key, value]) => ({
                key,
                value: { stringValue: value },
              })),
            })),
          },
        ],
      },
    ],
  };
}

function protobufRequest(spans: TestSpan[]): Uint8Array {
  const schema = loadOtlpTraceSchema();
  const json = jsonRequest(spans) as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] };
  for (const span of json.resourceSpans[0]!.scopeSpans[0]!.spans) {
    span.traceId = Buffer.from(span.traceId as string, "hex");
    span.spanId = Buffer.from(span.spanId as string, "hex");
  }
  return schema.request.encode(schema.request.fromObject(json)).finish();
}

function postJson(body: unknown): Promise<Response> {
  return gw.call("POST", "/v1/traces", body);
}
