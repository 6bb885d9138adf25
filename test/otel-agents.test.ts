/**
 * OpenTelemetry-instrumented agents, unchanged, run by the controller with only environment variables: their spans
 * land in their rollout as a tree, their model calls carry the enclosing span, and the triplet view names the agent.
 */
import { resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import type { Event, ModelRequestData, SpanData, TripletEvent, TripletModelRequest } from "../src/protocol/index.js";
import { skipWithoutPython, testPython } from "../src/testing/python.js";

const FIXTURES = resolve(import.meta.dirname, "fixtures");

let h: ControllerHarness;
let fake: FakeVllm;
beforeEach(async () => {
  fake = await FakeVllm.start({ content: "42" });
  h = await startHarness();
  await h.gateway.call("POST", "/api/models", [{ model: "policy", endpoint: fake.url }]);
});
afterEach(async () => {
  await h.close();
  await fake.close();
});

/** Runs one rollout whose agent is `command`, and returns its events once it succeeded. */
async function runAgent(command: string[]): Promise<{ rolloutId: string; events: Event[] }> {
  const [rollout] = await h.create([{ input: {}, config: { local: { command } } }]);
  h.controller().start();
  const [done] = await h.waitTerminal([rollout!.rollout_id], 60_000);
  expect(done!.status.state, done!.status.error_message ?? "").toBe("succeeded");
  return { rolloutId: rollout!.rollout_id, events: await h.gateway.store.listEvents(rollout!.rollout_id) };
}

function spansByName(events: Event[]): Map<string, SpanData> {
  return new Map(
    events.filter((e) => e.event_type === "span").map((e) => [(e.data as SpanData).name, e.data as SpanData]),
  );
}

async function tripletAgents(rolloutId: string): Promise<(string | undefined)[]> {
  const res = await h.gateway.call("GET", `/api/rollouts/${rolloutId}/events?format=triplet`);
  const events = (await res.json()) as TripletEvent[];
  return events.filter((e) => e.event_type === "model_request").map((e) => (e.data as TripletModelRequest).agent_name);
}

describe("OpenTelemetry agents run by the controller", () => {
  it("a Node agent (sdk-trace-node + OTLP/protobuf exporter) lands its span tree and model call in its rollout", async () => {
    const { rolloutId, events } = await runAgent(["node", resolve(FIXTURES, "otel-node-agent.mjs")]);
    const spans = spansByName(events);
    expect([...spans.keys()].sort()).toEqual(["agent.run", "llm.chat", "tool.calculator"]);
    const run = spans.get("agent.run")!;
    expect(spans.get("tool.calculator")!.parent_span_id).toBe(run.span_id);
    expect(spans.get("llm.chat")!.parent_span_id).toBe(run.span_id);
    expect(spans.get("tool.calculator")!.attributes).toEqual({ expression: "6*7", result: 42 });
    expect(run.resource).toMatchObject({
      "arclight.rollout_id": rolloutId,
      "arclight.attempt_id": "0",
      "service.name": "arclight-agent",
    });
    expect(events.every((e) => e.attempt_id === "0")).toBe(true);
    // The model call knows its enclosing span; the triplet view names the agent through it.
    const call = events.find((e) => e.event_type === "model_request")!.data as ModelRequestData;
    expect(call.trace_context).toMatchObject({ trace_id: run.trace_id, span_id: spans.get("llm.chat")!.span_id });
    expect(await tripletAgents(rolloutId)).toEqual(["solver"]);
  });
});

describe.skipIf(skipWithoutPython())("a Python agent run by the controller", () => {
  it("exports OTLP/protobuf built with opentelemetry-proto to its rollout, configured by the env only", async () => {
    const { rolloutId, events } = await runAgent([testPython()!, resolve(FIXTURES, "otel-python-agent.py")]);
    const spans = spansByName(events);
    expect([...spans.keys()].sort()).toEqual(["agent.run", "llm.chat", "tool.add"]);
    expect(spans.get("tool.add")!.attributes).toEqual({ expression: "2+2", result: 4 });
    expect(spans.get("agent.run")!.resource["arclight.rollout_id"]).toBe(rolloutId);
    const call = events.find((e) => e.event_type === "model_request")!.data as ModelRequestData;
    expect(call.trace_context?.span_id).toBe(spans.get("llm.chat")!.span_id);
    expect(await tripletAgents(rolloutId)).toEqual(["py-solver"]);
  });
});
