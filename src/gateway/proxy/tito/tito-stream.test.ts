/**
 * @module A `tito` call with `stream: true` answers as chat completion chunks (role, tool calls, finish, usage,
 * `[DONE]`) carrying the recorded answer, and the next streamed turn reuses the recorded prefix. A `tito` call keeps
 * the proxy's call deadlines.
 */
import { once } from "node:events";
import { createServer } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { agentCall } from "../../testing/proxy-client.js";
import { type ProxyHarness, startProxyHarness } from "../../testing/proxy-harness.js";
import { calcModel } from "./testing/stack-rollouts.js";
import { TokenVllm } from "./testing/token-vllm.js";
import { QWEN2_TOKENIZER_DIR } from "./testing/tokenizer-fixture.js";

type Json = Record<string, unknown>;
let h: ProxyHarness;
let fake: TokenVllm;
afterEach(async () => {
  await h?.close();
  await fake?.close();
});

describe("tito streaming", () => {
  it("streams the parsed tool call and finish reason, and the next streamed turn takes the prefix path", async () => {
    fake = await TokenVllm.start(QWEN2_TOKENIZER_DIR, calcModel);
    h = await startProxyHarness({
      models: [{ model: "policy", endpoint: fake.url, mode: "tito", tokenizer: QWEN2_TOKENIZER_DIR }],
    });
    const rid = await h.newRollout();
    const question = { role: "user", content: "Compute." };
    const body = { model: "m", stream: true, stream_options: { include_usage: true }, messages: [question] };
    const first = await agentCall(h, rid, "chat/completions", body);
    expect(first.headers.get("content-type")).toContain("text/event-stream");
    expect(first.events.at(-1)).toBe("[DONE]");
    const chunks = first.events.slice(0, -1).map((e) => JSON.parse(e) as Json);
    const deltas = chunks.flatMap((c) => (c.choices as Json[]).map((choice) => choice.delta as Json));
    expect(deltas[0]).toEqual({ role: "assistant", content: "" });
    const call = (deltas.find((d) => d.tool_calls) as { tool_calls: Json[] }).tool_calls[0]!;
    expect(call).toMatchObject({
      index: 0,
      type: "function",
      function: { name: "calc", arguments: '{"expression": "2+3"}' },
    });
    const finish = chunks.flatMap((c) => c.choices as Json[]).find((c) => c.finish_reason !== null);
    expect(finish?.finish_reason).toBe("tool_calls");
    expect((chunks.at(-1) as { usage: Json }).usage.completion_tokens).toBeGreaterThan(0);

    const assistant = { role: "assistant", content: null, tool_calls: [{ ...call, index: undefined }] };
    const tool = { role: "tool", tool_call_id: call.id, content: "5" };
    await agentCall(h, rid, "chat/completions", { ...body, messages: [question, assistant, tool] });
    const events = await h.store.listEvents(rid, { eventType: "model_request" });
    expect(events.map((e) => ((e.data as Json).tito as Json).path)).toEqual(["full", "prefix"]);
  });
});

describe("tito deadlines", () => {
  // Before: a tito call had neither the total deadline nor the drain deadline: a silent upstream held it forever.
  it("answers 504 at the total deadline when the upstream never answers, and records the call", async () => {
    const silent = createServer(() => {});
    silent.listen(0, "127.0.0.1");
    await once(silent, "listening");
    const { port } = silent.address() as { port: number };
    try {
      h = await startProxyHarness({
        models: [
          { model: "policy", endpoint: `http://127.0.0.1:${port}/v1`, mode: "tito", tokenizer: QWEN2_TOKENIZER_DIR },
        ],
        options: { upstreamTotalTimeoutMs: 500 },
      });
      const rid = await h.newRollout();
      const startedAt = performance.now();
      const answer = await agentCall(h, rid, "chat/completions", {
        model: "m",
        messages: [{ role: "user", content: "Hi" }],
      });
      expect(answer.status).toBe(504);
      expect(performance.now() - startedAt).toBeLessThan(5000);
      const [event] = await h.store.listEvents(rid, { eventType: "model_request" });
      expect(event?.data).toMatchObject({ status: "error", http_status: 504 });
      expect(h.pause.state().inflight).toBe(0);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});
