/**
 * The agent SDK's spans inside a controller-run rollout: the built-in tracer (no OpenTelemetry) and
 * `setupOpenTelemetry()` (the real SDK) both land their spans in the rollout.
 */
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import type { Event, ModelRequestData, SpanData, TripletEvent, TripletModelRequest } from "../src/protocol/index.js";

/** Agents import the SDK's TypeScript source, so they run under tsx's loader. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const SDK = JSON.stringify(pathToFileURL(fileURLToPath(new URL("../src/agent/index.ts", import.meta.url))).href);
/** The agent script lives in a temp dir: it imports the OTel API by absolute URL. */
const OTEL_API = JSON.stringify(pathToFileURL(createRequire(import.meta.url).resolve("@opentelemetry/api")).href);

let h: ControllerHarness;
let fake: FakeVllm;
beforeEach(async () => {
  fake = await FakeVllm.start({ content: "42" });
  h = await startHarness({ NODE_OPTIONS: `--import=${TSX_LOADER}` });
  await h.gateway.call("POST", "/api/models", [{ model: "policy", endpoint: fake.url }]);
});
afterEach(async () => {
  await h.close();
  await fake.close();
});

async function run(
  script: string,
  controllerConfig: Record<string, unknown> = {},
): Promise<{ id: string; events: Event[] }> {
  const agent = h.script("agent.mjs", script);
  const [rollout] = await h.create([{ input: {}, config: { local: { command: ["node", agent] } } }]);
  h.controller(controllerConfig).start();
  const [done] = await h.waitTerminal([rollout!.rollout_id], 60_000);
  expect(done!.status.state, done!.status.error_message ?? "").toBe("succeeded");
  return { id: rollout!.rollout_id, events: await h.gateway.store.listEvents(rollout!.rollout_id) };
}

function spans(events: Event[]): Map<string, SpanData> {
  return new Map(
    events.filter((e) => e.event_type === "span").map((e) => [(e.data as SpanData).name, e.data as SpanData]),
  );
}

const TRACER_AGENT = `
import { emitReward, openaiClient, span, toolCall } from ${SDK};
const client = openaiClient({ maxRetries: 0 });
await span("agent.run", async () => {
  await toolCall("calculator", async (s) => { s.setAttribute("result", 42); return 42; }, { expression: "6*7" });
  const completion = await span("llm.chat", () =>
    client.chat.completions.create({ model: "policy", messages: [{ role: "user", content: "6*7?" }] }));
  await emitReward(1, { callId: completion.id });
  await toolCall("broken", () => { throw new Error("boom"); }).catch(() => {});
}, { "gen_ai.agent.name": "tracer-agent" });
`;

describe("the built-in tracer in a controller-run agent", () => {
  it("exports the span tree with tool calls, errors, the model call's traceparent and a reward tied to its span", async () => {
    const { id, events } = await run(TRACER_AGENT);
    const byName = spans(events);
    expect([...byName.keys()].sort()).toEqual([
      "agent.run",
      "execute_tool broken",
      "execute_tool calculator",
      "llm.chat",
    ]);
    const root = byName.get("agent.run")!;
    expect(root.parent_span_id).toBeNull();
    for (const name of ["execute_tool calculator", "llm.chat", "execute_tool broken"]) {
      expect(byName.get(name)!.parent_span_id, name).toBe(root.span_id);
      expect(byName.get(name)!.trace_id, name).toBe(root.trace_id);
    }
    expect(byName.get("execute_tool calculator")!.attributes).toEqual({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "calculator",
      expression: "6*7",
      result: 42,
    });
    const broken = byName.get("execute_tool broken")!;
    expect(broken.status).toEqual({ code: "error", message: "boom" });
    expect(broken.events[0]).toMatchObject({ name: "exception", attributes: { "exception.message": "boom" } });
    expect(root.resource).toMatchObject({ "arclight.rollout_id": id, "arclight.attempt_id": "0" });

    const call = events.find((e) => e.event_type === "model_request")!.data as ModelRequestData;
    expect(call.trace_context?.span_id).toBe(byName.get("llm.chat")!.span_id);
    const reward = events.find((e) => e.event_type === "reward")!.data;
    expect(reward).toMatchObject({ value: 1, span_id: root.span_id, trace_id: root.trace_id });
    expect(reward.call_id).toBe((call.response as { id: string }).id);

    const triplets = (await (
      await h.gateway.call("GET", `/api/rollouts/${id}/events?format=triplet`)
    ).json()) as TripletEvent[];
    const agents = triplets
      .filter((e) => e.event_type === "model_request")
      .map((e) => (e.data as TripletModelRequest).agent_name);
    expect(agents).toEqual(["tracer-agent"]);
  });
});

describe("setupOpenTelemetry in a controller-run agent", () => {
  it("exports the real SDK's spans to the rollout, even with the controller's OTEL_* variables off", async () => {
    const { id, events } = await run(
      `
import { trace } from ${OTEL_API};
import { setupOpenTelemetry } from ${SDK};
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) throw new Error("standard_env should be off");
const otel = await setupOpenTelemetry({ serviceName: "sdk-agent" });
const tracer = trace.getTracer("sdk-test");
tracer.startActiveSpan("outer", (outer) => {
  tracer.startActiveSpan("inner", (inner) => inner.end());
  outer.end();
});
await otel.shutdown();
`,
      { standard_env: false },
    );
    const byName = spans(events);
    expect(byName.get("inner")!.parent_span_id).toBe(byName.get("outer")!.span_id);
    expect(byName.get("outer")!.resource).toMatchObject({ "service.name": "sdk-agent", "arclight.rollout_id": id });
  });
});
