import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequestData } from "../../protocol/index.js";
import type { ProxyOptionsInput } from "../proxy/options.js";
import { agentCall, chatRequest } from "../testing/proxy-client.js";
import { type ProxyHarness, startProxyHarness } from "../testing/proxy-harness.js";
import { type ScriptedUpstream, startScriptedUpstream } from "../testing/scripted-upstream.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Handler = (req: IncomingMessage, res: ServerResponse, call: number) => void;

async function setup(
  handler: Handler,
  options: ProxyOptionsInput = {},
): Promise<{ h: ProxyHarness; rid: string; upstream: ScriptedUpstream }> {
  const upstream = await startScriptedUpstream(handler);
  const h = await startProxyHarness({ options, models: [{ model: "policy", endpoint: upstream.url }] });
  cleanups.push(async () => {
    await h.close();
    await upstream.close();
  });
  return { h, rid: await h.newRollout(), upstream };
}

async function events(h: ProxyHarness, rid: string, type: string): Promise<Record<string, unknown>[]> {
  return (await h.store.listEvents(rid, { eventType: type })).map((e) => e.data as Record<string, unknown>);
}

const CHAT = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "policy",
  prompt_token_ids: [1],
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop", token_ids: [5, 2] }],
  usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
};

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** Answers 200 SSE: one event, then a byte every 100 ms, forever (until the socket closes). */
function trickle(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.write(`data: ${JSON.stringify({ ...CHAT, object: "chat.completion.chunk", choices: [] })}\n\n`);
  const timer = setInterval(() => res.write(":"), 100);
  res.on("close", () => clearInterval(timer));
}

describe("upstream Retry-After", () => {
  // Retrying a 429 with Retry-After: 30 within seconds helps nobody; the agent gets the 429 with the header instead.
  it("passes a Retry-After longer than the cap to the agent at once, without retrying", async () => {
    const { h, rid, upstream } = await setup((_req, res) =>
      json(res, 429, { error: { message: "slow down", code: 429 } }, { "retry-after": "30" }),
    );
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(429);
    expect(answer.headers.get("retry-after")).toBe("30");
    expect(upstream.calls).toBe(1);
  });

  it("waits out a Retry-After within the cap before retrying", async () => {
    const { h, rid, upstream } = await setup((_req, res, call) =>
      call === 0 ? json(res, 503, { error: { message: "busy" } }, { "retry-after": "1" }) : json(res, 200, CHAT),
    );
    const startedAt = performance.now();
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(200);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(1000);
    expect(upstream.calls).toBe(2);
  });
});

describe("retry budget", () => {
  // Without a budget, 40 agents whose calls all fail would make 240 upstream requests (6 tries each).
  it("keeps retries of a failing endpoint within the floor plus ratio × first tries", async () => {
    const { h, upstream } = await setup((_req, res) => json(res, 503, { error: { message: "down" } }), {
      retryBudgetRatio: 0.2,
      retryBudgetMinRetries: 2,
    });
    const rids = await Promise.all(Array.from({ length: 20 }, () => h.newRollout()));
    const answers = await Promise.all(rids.map((rid) => agentCall(h, rid, "chat/completions", chatRequest())));
    expect(answers.every((a) => a.status === 503)).toBe(true);
    expect(upstream.calls).toBeLessThanOrEqual(20 + 2 + 0.2 * 20);
  });
});

describe("total deadline", () => {
  // A timeout between chunks alone would let an upstream sending a byte every 2 s hold the call forever.
  it("ends a trickling stream at the total deadline with a 504 error event, recorded", async () => {
    const { h, rid } = await setup((_req, res) => trickle(res), { upstreamTotalTimeoutMs: 1000 });
    const startedAt = performance.now();
    const answer = await agentCall(h, rid, "chat/completions", chatRequest({ stream: true }));
    expect(performance.now() - startedAt).toBeLessThan(5000);
    const error = answer.events.map((e) => (e.startsWith("{") ? JSON.parse(e) : e)).find((e) => e.error);
    expect(error.error).toMatchObject({ code: 504, message: expect.stringMatching(/within 1000 ms/) });
    const [event] = (await events(h, rid, "model_request")) as unknown as ModelRequestData[];
    expect(event).toMatchObject({ status: "error", http_status: 504 });
  });

  it("answers 504 for a non-stream body that trickles past the total deadline", async () => {
    const { h, rid } = await setup(
      (_req, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        const timer = setInterval(() => res.write(" "), 100);
        res.on("close", () => clearInterval(timer));
      },
      { upstreamTotalTimeoutMs: 1000 },
    );
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(504);
  });
});

describe("drain deadline", () => {
  // Without a drain deadline, POST /proxy/pause would never drain while a trickling call runs (`inflight` stays 1).
  it("aborts a call still running drainTimeoutMs after a pause: error event, model_request error and an abort event", async () => {
    const { h, rid } = await setup((_req, res) => trickle(res), { drainTimeoutMs: 500 });
    const answered = agentCall(h, rid, "chat/completions", chatRequest({ stream: true }));
    await waitUntil(() => h.pause.state().inflight === 1);
    await h.pause.setPaused({ paused: true, retry_after_seconds: 7, reason: "update" });
    await h.pause.drained();
    const answer = await answered;
    expect(answer.text).toMatch(/"code":503/);
    const [event] = await events(h, rid, "model_request");
    expect(event).toMatchObject({ status: "error", http_status: 503 });
    const [abort] = await events(h, rid, "abort");
    expect(abort).toMatchObject({ reason: "drain_deadline", drain_timeout_ms: 500 });
  });

  it("answers an aborted non-stream call 503 with the pause's Retry-After", async () => {
    const { h, rid } = await setup(() => undefined, { drainTimeoutMs: 500 }); // never answers
    const answered = agentCall(h, rid, "chat/completions", chatRequest());
    await waitUntil(() => h.pause.state().inflight === 1);
    await h.pause.setPaused({ paused: true, retry_after_seconds: 7, reason: "update" });
    const answer = await answered;
    expect(answer.status).toBe(503);
    expect(answer.headers.get("retry-after")).toBe("7");
    expect(answer.json).toMatchObject({ code: "call_aborted" });
    expect(await events(h, rid, "abort")).toHaveLength(1);
  });
});

describe("answer size cap", () => {
  // Uncapped, a 40 MB answer takes the gateway's RSS from 109 to 715 MiB.
  it("cuts off a non-stream answer larger than maxResponseBytes: 502, recorded, nothing relayed", async () => {
    const big = { ...CHAT, filler: "x".repeat(3 * 1024 * 1024) };
    const { h, rid } = await setup((_req, res) => json(res, 200, big), { maxResponseBytes: 1024 * 1024 });
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(502);
    expect(answer.text.length).toBeLessThan(1000);
    expect(answer.json).toMatchObject({ detail: expect.stringMatching(/larger than 1048576 bytes/) });
    const [event] = await events(h, rid, "model_request");
    expect(event).toMatchObject({ status: "error", http_status: 502 });
  });

  it("cuts off a stream larger than maxResponseBytes with a 502 error event", async () => {
    const chunk = `data: ${JSON.stringify({ ...CHAT, object: "chat.completion.chunk", choices: [], pad: "y".repeat(60_000) })}\n\n`;
    const { h, rid } = await setup(
      (_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        for (let i = 0; i < 40; i++) res.write(chunk);
        res.end("data: [DONE]\n\n");
      },
      { maxResponseBytes: 1024 * 1024 },
    );
    const answer = await agentCall(h, rid, "chat/completions", chatRequest({ stream: true }));
    expect(answer.text).toMatch(/larger than 1048576 bytes/);
    const [event] = await events(h, rid, "model_request");
    expect(event).toMatchObject({ status: "error", http_status: 502 });
  });
});

describe("upstream URL", () => {
  it("is not shown to the agent in a 502 detail", async () => {
    const { h, rid, upstream } = await setup((_req, res) => res.destroy());
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(502);
    expect(answer.text).not.toContain(new URL(upstream.url).host);
  });
});

async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
