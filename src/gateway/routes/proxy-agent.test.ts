import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequestData, TripletEvent, TripletModelRequest } from "../../protocol/index.js";
import { FakeVllm } from "../testing/fake-vllm.js";
import { startTestGateway, type TestGateway } from "../testing/serve.js";

let gw: TestGateway;
let fake: FakeVllm;
afterEach(async () => {
  await gw?.close();
  await fake?.close();
});

const BASE = "/proxy/rollout/r/attempt/0/mode/train";
const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

async function start(): Promise<void> {
  fake = await FakeVllm.start({ content: "ok" });
  gw = await startTestGateway({ agent_models: { "planner-model": "planner" } });
  await gw.call("POST", "/api/models", [
    { model: "policy", endpoint: fake.url },
    { model: "planner-model", endpoint: fake.url },
  ]);
  await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
}

async function chat(
  path: string,
  model = "policy",
  headers: Record<string, string> = {},
  content = "hi",
): Promise<Response> {
  return gw.call(
    "POST",
    `${path}/openai/v1/chat/completions`,
    { model, messages: [{ role: "user", content }] },
    headers,
  );
}

async function lastCall(): Promise<ModelRequestData> {
  const events = await gw.store.listEvents("r", { eventType: "model_request" });
  return events.at(-1)!.data as ModelRequestData;
}

describe("routing by agent (agent_routes)", () => {
  it("serves a routed agent's calls from the endpoints of its model, others from the proxy's", async () => {
    const trained = await FakeVllm.start({ content: "trained" });
    const frozen = await FakeVllm.start({ content: "frozen" });
    try {
      gw = await startTestGateway({ model_name: "policy", agent_routes: { "/^check/": "frozen" } });
      await gw.call("POST", "/api/models", [
        { model: "policy", endpoint: trained.url, version: 3 },
        { model: "frozen", endpoint: frozen.url, version: 0 },
      ]);
      await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
      const answerOf = async (agent: string) => {
        const response = await chat(`${BASE}/agent/${agent}`);
        return ((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
      };
      expect(await answerOf("checker")).toBe("frozen");
      expect(await lastCall()).toMatchObject({ model: "frozen", agent_name: "checker", server: { version: 0 } });
      expect(await answerOf("writer")).toBe("trained");
      expect(await lastCall()).toMatchObject({ model: "policy", agent_name: "writer", server: { version: 3 } });
      expect(frozen.received.map((r) => r.body.model)).toEqual(["frozen"]);
    } finally {
      await trained.close();
      await frozen.close();
    }
  });
});

describe("agent identity on proxied model calls", () => {
  it("records the agent named by the path segment …/agent/{name}/openai/v1", async () => {
    await start();
    expect((await chat(`${BASE}/agent/coder%20one`)).status).toBe(200);
    expect((await lastCall()).agent_name).toBe("coder one");
  });

  it("records the agent named by the x-arclight-agent header", async () => {
    await start();
    expect((await chat(BASE, "policy", { "x-arclight-agent": "critic" })).status).toBe(200);
    expect((await lastCall()).agent_name).toBe("critic");
  });

  it("prefers the path segment over the header", async () => {
    await start();
    await chat(`${BASE}/agent/coder`, "policy", { "x-arclight-agent": "critic" });
    expect((await lastCall()).agent_name).toBe("coder");
  });

  it("maps the requested model name to an agent through agent_models", async () => {
    await start();
    await chat(BASE, "planner-model");
    expect((await lastCall()).agent_name).toBe("planner");
  });

  it("records no agent when nothing names one", async () => {
    await start();
    await chat(BASE);
    expect((await lastCall()).agent_name).toBeUndefined();
  });

  it("refuses an empty agent name with 400 and records nothing", async () => {
    await start();
    const res = await chat(BASE, "policy", { "x-arclight-agent": "  " });
    expect(res.status).toBe(400);
    expect(await gw.store.countEvents()).toBe(0);
  });

  it("stores the W3C traceparent of the call, ignoring a malformed one", async () => {
    await start();
    await chat(BASE, "policy", { traceparent: TRACEPARENT });
    expect((await lastCall()).trace_context).toEqual({
      traceparent: TRACEPARENT,
      trace_id: "0af7651916cd43dd8448eb211c80319c",
      span_id: "b7ad6b7169203331",
    });
    await chat(BASE, "policy", { traceparent: "00-zz-nope-01" });
    expect((await lastCall()).trace_context).toBeUndefined();
  });

  it("shows the agent in format=triplet, from the call or from its enclosing span's gen_ai.agent.name", async () => {
    await start();
    // Distinct prompts: the triplet view keeps only the last of calls with identical prompt ids (retries).
    await chat(`${BASE}/agent/coder`, "policy", {}, "first");
    await chat(BASE, "policy", { traceparent: TRACEPARENT }, "second");
    // The span enclosing the second call (the HTTP client span) sits under the agent's span.
    const span = (id: string, parent: string | undefined, attributes: Record<string, string>) => ({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: id,
      parentSpanId: parent,
      name: `s-${id}`,
      attributes: Object.entries({ "arclight.rollout_id": "r", ...attributes }).map(([key, value]) => ({
        key,
        value: { stringValue: value },
      })),
    });
    const traces = {
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                span("b7ad6b7169203331", "00000000000000aa", { "http.method": "POST" }),
                span("00000000000000aa", undefined, { "gen_ai.agent.name": "reviewer" }),
              ],
            },
          ],
        },
      ],
    };
    expect((await gw.call("POST", "/v1/traces", traces)).status).toBe(200);
    const triplets = (await (await gw.call("GET", "/api/rollouts/r/events?format=triplet")).json()) as TripletEvent[];
    const calls = triplets.filter((e) => e.event_type === "model_request").map((e) => e.data as TripletModelRequest);
    expect(calls.map((c) => c.agent_name)).toEqual(["coder", "reviewer"]);
  });
});
