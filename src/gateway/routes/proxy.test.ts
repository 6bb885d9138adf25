import { once } from "node:events";
import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequestData } from "../../protocol/index.js";
import type { ProxyOptionsInput } from "../proxy/options.js";
import { fnv1a } from "../proxy/upstream.js";
import { FakeVllm } from "../testing/fake-vllm.js";
import { agentCall, chatRequest } from "../testing/proxy-client.js";
import { type ProxyHarness, startProxyHarness } from "../testing/proxy-harness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(options: ProxyOptionsInput = {}, fakes = 1, nowMs?: () => number) {
  const upstreams: FakeVllm[] = [];
  for (let i = 0; i < fakes; i++) upstreams.push(await FakeVllm.start());
  const h = await startProxyHarness({
    options,
    nowMs,
    models: upstreams.map((f, i) => ({ model: "policy", endpoint: f.url, version: 3 + i })),
  });
  cleanups.push(async () => {
    await h.close();
    for (const f of upstreams) await f.close();
  });
  return { h, fake: upstreams[0]!, upstreams, rid: await h.newRollout() };
}

async function modelEvents(h: ProxyHarness, rid: string): Promise<ModelRequestData[]> {
  return (await h.store.listEvents(rid, { eventType: "model_request" })).map((e) => e.data as ModelRequestData);
}

/** A port nothing listens on: bind, read the port, close. */
async function deadPort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("proxy routing and errors", () => {
  it("answers 401 without the key, and accepts it as the agent's OpenAI Bearer key", async () => {
    const { h, rid, fake } = await setup();
    expect((await agentCall(h, rid, "chat/completions", chatRequest(), { key: null })).status).toBe(401);
    expect((await agentCall(h, rid, "chat/completions", chatRequest(), { key: "wrong" })).status).toBe(401);
    expect(fake.received).toHaveLength(0);
    expect((await agentCall(h, rid, "chat/completions", chatRequest())).status).toBe(200);
  });

  it("answers 404 for an unknown mode, path or rollout, 400 for bad JSON, 409 for a superseded attempt", async () => {
    const { h, rid, fake } = await setup();
    const mode = await agentCall(h, rid, "chat/completions", chatRequest(), { mode: "eval" });
    expect(mode.status).toBe(404);
    expect((mode.json as { detail: string }).detail).toMatch(/mode eval/);
    expect((await agentCall(h, rid, "embeddings", chatRequest())).status).toBe(404);
    const unknown = await agentCall(h, "ro-nope", "chat/completions", chatRequest());
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({ code: "rollout_not_found" });
    const bad = await agentCall(h, rid, "chat/completions", '{"model": "x", "messages": [');
    expect(bad.status).toBe(400);
    expect((bad.json as { detail: string }).detail).toMatch(/Invalid JSON/);
    expect((await agentCall(h, rid, "chat/completions", "[1, 2]")).status).toBe(400);
    await h.store.patchRollout(rid, { status: { last_attempt_id: "7" } }); // attempt "0" is now superseded
    const stale = await agentCall(h, rid, "chat/completions", chatRequest(), { attemptId: "0" });
    expect(stale.status).toBe(409);
    expect(stale.json).toMatchObject({ code: "stale_attempt", current_attempt_id: "7" });
    expect(fake.received).toHaveLength(0);
    expect(await modelEvents(h, rid)).toHaveLength(0);
  });

  it("answers 409 rollout_finished for a call to a terminal rollout, without calling upstream", async () => {
    const { h, rid, fake } = await setup();
    await h.store.patchRollout(rid, { status: { state: "running" } });
    await h.store.patchRollout(rid, { status: { state: "failed" } });
    const late = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(late.status).toBe(409);
    expect(late.json).toMatchObject({ code: "rollout_finished", detail: `Rollout ${rid} is failed: no more writes` });
    expect(fake.received).toHaveLength(0);
    expect(await modelEvents(h, rid)).toHaveLength(0);
  });

  it("answers 503 when no endpoint is registered for the model", async () => {
    const { h, rid } = await setup({ modelName: "unregistered" });
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(503);
    expect(answer.json).toMatchObject({
      code: "no_endpoint",
      detail:
        'No endpoint is registered for model unregistered: register an endpoint with POST /api/models [{"model": ' +
        '"unregistered", "endpoint": "http://HOST:PORT/v1"}], or start the gateway with --model-name set to a ' +
        "registered model",
    });
  });

  it("keeps the 503 small for an agent's model name of a million characters, and a 404 for a long path", async () => {
    const { h, rid } = await setup({ modelName: "" });
    const answer = await agentCall(h, rid, "chat/completions", chatRequest({ model: "q".repeat(1_000_000) }));
    expect(answer.status).toBe(503);
    const detail = (answer.json as { detail: string }).detail;
    expect(detail).toBe(
      `No endpoint is registered for model ${"q".repeat(200)}… (1000000 characters): no model name over 1000 ` +
        "characters can be registered: check the model the agent asks for, or start the gateway with --model-name " +
        "set to a registered model",
    );
    const missing = await agentCall(h, rid, `${"z".repeat(14_000)}`, chatRequest());
    expect(missing.status).toBe(404);
    expect((missing.json as { detail: string }).detail).toMatch(
      /^No proxy route POST \/proxy\/rollout\/.*z… \(\d+ characters\)$/,
    );
    // The detail twice: as `detail`, and as the message of OpenAI's `error` object (error-handler.ts).
    expect(JSON.stringify(missing.json).length).toBeLessThan(800);
  });
  it("names the Anthropic base URL when an Anthropic client is given the OpenAI base", async () => {
    const { h, rid } = await setup();
    // The Anthropic SDK appends /v1/messages to its base URL: `…/openai/v1` becomes `…/openai/v1/v1/messages`.
    const answer = await agentCall(h, rid, "v1/messages", { model: "m", max_tokens: 8, messages: [] });
    expect(answer.status).toBe(404);
    expect((answer.json as { detail: string }).detail).toBe(
      `No proxy route POST /proxy/rollout/${rid}/attempt/0/mode/train/openai/v1/v1/messages: the Anthropic ` +
        `Messages API is served under /proxy/rollout/${rid}/attempt/0/mode/train/anthropic, not under the ` +
        "OpenAI base …/openai/v1: give the Anthropic client that base URL (ANTHROPIC_BASE_URL; the SDK appends " +
        "/v1/messages)",
    );
    const other = await agentCall(h, rid, "v1/embeddings", {});
    expect((other.json as { detail: string }).detail).not.toContain("Anthropic");
  });
  it("names the OpenAI base URL when an OpenAI client is given the Anthropic base", async () => {
    const { h, rid } = await setup();
    // The OpenAI SDK appends /chat/completions to its base URL: `…/anthropic` becomes `…/anthropic/chat/completions`.
    const answer = await agentCall(h, rid, "../../anthropic/chat/completions", chatRequest());
    expect(answer.status).toBe(404);
    expect((answer.json as { detail: string }).detail).toBe(
      `No proxy route POST /proxy/rollout/${rid}/attempt/0/mode/train/anthropic/chat/completions: the OpenAI APIs ` +
        `are served under /proxy/rollout/${rid}/attempt/0/mode/train/openai/v1, not under the Anthropic base ` +
        "…/anthropic: give the OpenAI client that base URL (AGL_OPENAI_BASE_URL)",
    );
  });
});

describe("upstream body", () => {
  it("sets model, train temperature, return_token_ids and logprobs, and forwards everything else untouched", async () => {
    const { h, rid, fake } = await setup({ trainTemperature: 0.7 });
    const messages = [
      { role: "user", content: "weather?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "w", arguments: '{"city":  "Paris" }' } }],
      },
      { role: "tool", tool_call_id: "call_1", content: "sunny" },
    ];
    const body = { model: "gpt-x", messages, temperature: 0.1, top_p: 0.9, vendor_field: { nested: [1, null] } };
    expect((await agentCall(h, rid, "chat/completions", body)).status).toBe(200);
    expect(fake.received[0]!.body).toEqual({
      ...body,
      model: "policy",
      temperature: 0.7,
      return_token_ids: true,
      logprobs: true,
    });
    // The argument string is forwarded byte for byte (odd spacing kept), and `content: null` stays null.
    const sent = fake.received[0]!.body.messages as typeof messages;
    expect(sent[1]!.tool_calls![0]!.function.arguments).toBe('{"city":  "Paris" }');
    expect(sent[1]!.content).toBeNull();
  });

  it("uses the val temperature and asks no logprobs in val mode", async () => {
    const { h, rid, fake } = await setup({ valTemperature: 0.2 });
    await agentCall(h, rid, "chat/completions", chatRequest(), { mode: "val" });
    expect(fake.received[0]!.body).toEqual({
      ...chatRequest(),
      model: "policy",
      temperature: 0.2,
      return_token_ids: true,
    });
  });

  it("forwards a token-array prompt on /completions and records the echoed prompt ids", async () => {
    const { h, rid, fake } = await setup();
    const prompt = [101, 7592, 2088, 102];
    const answer = await agentCall(h, rid, "completions", { model: "m", prompt, max_tokens: 4, logprobs: 2 });
    expect(answer.status).toBe(200);
    expect(fake.received[0]!.body).toMatchObject({ prompt, max_tokens: 4, logprobs: 2, return_token_ids: true });
    const [event] = await modelEvents(h, rid);
    const choice = (event!.response as { choices: { prompt_token_ids: number[]; token_ids: number[] }[] }).choices[0]!;
    expect(choice.prompt_token_ids).toEqual(prompt);
    expect(choice.token_ids).toHaveLength(4);
    expect(event!.finish_reason).toBe("length");
  });
});

describe("retries and timeouts", () => {
  it.each([408, 409, 429, 500, 503])("retries after %i answers and records retry_count", async (status) => {
    const { h, rid, fake } = await setup();
    fake.behave({ failTimes: 2, failStatus: status });
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(200);
    expect(fake.received).toHaveLength(3);
    const [event] = await modelEvents(h, rid);
    expect(event).toMatchObject({ status: "ok", http_status: 200, retry_count: 2 });
  });

  // vLLM rejects a request id that is still running, so an agent's body request_id cannot go unchanged to every
  // retry: each upstream try gets its own id, in the x-request-id header and in the body.
  it("gives every upstream try its own request id, header and body, and records the agent's own id", async () => {
    const { h, rid, fake } = await setup();
    fake.behave({ failTimes: 1, failStatus: 503 });
    // The proxy retries the 503 itself; then the agent repeats its call with the same id.
    await agentCall(h, rid, "chat/completions", chatRequest({ request_id: "agent-req-1" }));
    await agentCall(h, rid, "chat/completions", chatRequest({ request_id: "agent-req-1" }));
    const headerIds = fake.received.map((c) => c.headers["x-request-id"]);
    expect(headerIds).toHaveLength(3);
    expect(new Set(headerIds).size).toBe(3);
    expect(fake.received.map((c) => c.body.request_id)).toEqual(headerIds);
    const events = await modelEvents(h, rid);
    expect(events.map((e) => e.agent_request_id)).toEqual(["agent-req-1", "agent-req-1"]);
    expect(events.map((e) => e.upstream_request_id)).toEqual([headerIds[1], headerIds[2]]);
  });

  it("sends the configured upstream key as a Bearer token, and no authorization header without one", async () => {
    const keyed = await setup({ upstreamKey: "sk-upstream" });
    await agentCall(keyed.h, keyed.rid, "chat/completions", chatRequest());
    expect(keyed.fake.received[0]?.headers.authorization).toBe("Bearer sk-upstream");
    const plain = await setup();
    await agentCall(plain.h, plain.rid, "chat/completions", chatRequest());
    expect(plain.fake.received[0]?.headers.authorization).toBeUndefined();
  });

  it("sends a request id header but adds no body request_id when the agent sent none", async () => {
    const { h, rid, fake } = await setup();
    await agentCall(h, rid, "chat/completions", chatRequest());
    expect(fake.received[0]?.headers["x-request-id"]).toMatch(/^arclight-[0-9a-f]{16}-[0-9a-z]+-0$/);
    expect(fake.received[0]?.body.request_id).toBeUndefined();
    expect((await modelEvents(h, rid))[0]?.agent_request_id).toBeUndefined();
  });

  it("gives up after 6 tries and passes the last upstream error through, recorded as error", async () => {
    const { h, rid, fake } = await setup();
    fake.behave({ failTimes: 100, failStatus: 502 });
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(502);
    expect(answer.json).toMatchObject({ error: { message: "fake failure 6" } });
    expect(fake.received).toHaveLength(6);
    const [event] = await modelEvents(h, rid);
    expect(event).toMatchObject({ status: "error", http_status: 502, retry_count: 5, response: null });
    expect(event!.error).toEqual(answer.json);
  });

  it("answers 504 when the upstream hangs, records the timeout, and does not retry it", async () => {
    const { h, rid, fake } = await setup({ upstreamTimeoutMs: 300 });
    fake.behave({ hang: true });
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(504);
    expect(answer.json).toMatchObject({ code: "upstream_timeout" });
    expect((answer.json as { detail: string }).detail).toBe("Upstream of model policy did not answer within 300 ms");
    expect(fake.received).toHaveLength(1);
    const [event] = await modelEvents(h, rid);
    expect(event).toMatchObject({ status: "error", http_status: 504, retry_count: 0 });
  });

  it("passes a 400 context overflow through with its body and records it as an error, not retried", async () => {
    const { h, rid, fake } = await setup();
    fake.behave({ contextOverflow: true });
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(400);
    expect((answer.json as { error: { message: string } }).error.message).toMatch(/maximum context length/);
    expect(fake.received).toHaveLength(1);
    const [event] = await modelEvents(h, rid);
    expect(event).toMatchObject({ status: "error", http_status: 400, retry_count: 0, response: null });
    expect(event!.error).toEqual(answer.json);
  });
});

describe("endpoint choice", () => {
  it("sends every call of a rollout to the same endpoint, and spreads rollouts over endpoints", async () => {
    const { h, upstreams } = await setup({}, 3);
    const chosen = new Map<string, Set<string>>();
    for (let r = 0; r < 12; r++) {
      const rid = await h.newRollout(`ro-sticky-${r}`);
      for (let c = 0; c < 3; c++) await agentCall(h, rid, "chat/completions", chatRequest({ turn: c }));
      const servers = (await modelEvents(h, rid)).map((e) => e.server!.endpoint!);
      chosen.set(rid, new Set(servers));
    }
    for (const servers of chosen.values()) expect(servers.size).toBe(1);
    const used = upstreams.filter((f) => f.received.length > 0);
    expect(used.length).toBeGreaterThan(1);
  });

  it("skips an endpoint that refuses connections, then keeps skipping it during its cool-down", async () => {
    const fake = await FakeVllm.start();
    const dead = `http://127.0.0.1:${await deadPort()}/v1`;
    const h = await startProxyHarness({
      options: { endpointCooldownBaseMs: 60_000 },
      models: [
        { model: "policy", endpoint: dead, version: 1 },
        { model: "policy", endpoint: fake.url, version: 2 },
      ],
    });
    cleanups.push(async () => {
      await h.close();
      await fake.close();
    });
    // Rollouts whose sticky choice is the dead endpoint (endpoints sorted by URL, index = fnv1a(id) mod 2).
    const deadIndex = [dead, fake.url].sort().indexOf(dead);
    const ids = Array.from({ length: 40 }, (_, i) => `ro-dead-${i}`).filter((id) => fnv1a(id) % 2 === deadIndex);
    const first = await h.newRollout(ids[0]);
    const second = await h.newRollout(ids[1]);
    expect((await agentCall(h, first, "chat/completions", chatRequest())).status).toBe(200);
    expect((await agentCall(h, second, "chat/completions", chatRequest())).status).toBe(200);
    const [a] = await modelEvents(h, first);
    const [b] = await modelEvents(h, second);
    expect(a).toMatchObject({ status: "ok", retry_count: 1, model_version: 2, server: { endpoint: fake.url } });
    expect(b).toMatchObject({ status: "ok", retry_count: 0, server: { endpoint: fake.url } });
  });

  it("answers 502 and records the failure when no endpoint accepts connections", async () => {
    const dead = `http://127.0.0.1:${await deadPort()}/v1`;
    const h = await startProxyHarness({ models: [{ model: "policy", endpoint: dead }] });
    cleanups.push(() => h.close());
    const rid = await h.newRollout();
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    expect(answer.status).toBe(502);
    expect(answer.json).toMatchObject({ code: "upstream_failed" });
    // The agent learns which model's upstream failed, never its address (docs/security.md); the event has it.
    expect((answer.json as { detail: string }).detail).toBe(
      "Upstream of model policy unreachable after 6 tries: ECONNREFUSED",
    );
    const [event] = await modelEvents(h, rid);
    expect(event).toMatchObject({ status: "error", http_status: 502, retry_count: 5, server: { endpoint: dead } });
  });
});

describe("pause, drain and resume", () => {
  it("lets 20 in-flight calls finish while new calls get 429, and resume lets them through", async () => {
    const { h, fake } = await setup();
    fake.behave({ holdAfterEvents: 0 });
    const rids = await Promise.all(Array.from({ length: 20 }, (_, i) => h.newRollout(`ro-pause-${i}`)));
    const calls = rids.map((rid, i) => agentCall(h, rid, "chat/completions", chatRequest({ stream: i % 2 === 0 })));
    await fake.waitForHeld(20);
    const paused = await fetch(`${h.baseUrl}/proxy/pause`, {
      method: "POST",
      headers: { authorization: `Bearer ${h.key}`, "content-type": "application/json" },
      body: JSON.stringify({ retry_after_seconds: 7, reason: "weight update" }),
    });
    expect(await paused.json()).toEqual({
      paused: true,
      retry_after_seconds: 7,
      reason: "weight update",
      inflight: 20,
      lease_expires_at: null,
    });

    const rejected = await agentCall(h, rids[0]!, "chat/completions", chatRequest());
    expect(rejected.status).toBe(429);
    expect(rejected.headers.get("retry-after")).toBe("7");
    expect(rejected.headers.get("x-agl-paused")).toBe("true");
    expect(rejected.json).toMatchObject({
      error: "gateway paused",
      reason: "weight update",
      detail: expect.any(String),
    });

    const drained = h.pause.drained();
    fake.release();
    const answers = await Promise.all(calls);
    await drained;
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const state = await fetch(`${h.baseUrl}/proxy/state`, { headers: { authorization: `Bearer ${h.key}` } });
    expect(await state.json()).toMatchObject({
      paused: true,
      retry_after_seconds: 7,
      reason: "weight update",
      inflight: 0,
    });
    for (const rid of rids) expect(await modelEvents(h, rid)).toHaveLength(1);

    await fetch(`${h.baseUrl}/proxy/resume`, { method: "POST", headers: { authorization: `Bearer ${h.key}` } });
    fake.behave({});
    expect((await agentCall(h, rids[0]!, "chat/completions", chatRequest())).status).toBe(200);
    expect(h.pause.state()).toEqual({
      paused: false,
      retry_after_seconds: 0,
      reason: null,
      inflight: 0,
      lease_expires_at: null,
    });
  });

  // A trainer that crashes while paused must not leave every later agent call at 429.
  it("a pause nobody renews ends by itself when its lease runs out", async () => {
    const { h } = await setup();
    const rid = await h.newRollout("ro-lease");
    const pauseFor = (lease: number) =>
      fetch(`${h.baseUrl}/proxy/pause`, {
        method: "POST",
        headers: { authorization: `Bearer ${h.key}`, "content-type": "application/json" },
        body: JSON.stringify({ retry_after_seconds: 1, reason: "weight update", lease_seconds: lease }),
      }).then((r) => r.json() as Promise<{ lease_expires_at: number }>);
    const before = Date.now() / 1000;
    const paused = await pauseFor(0.3);
    expect(paused.lease_expires_at).toBeGreaterThanOrEqual(before + 0.3);
    expect((await agentCall(h, rid, "chat/completions", chatRequest())).status).toBe(429);
    // Renewing moves the expiry; then nobody renews.
    expect((await pauseFor(0.3)).lease_expires_at).toBeGreaterThanOrEqual(paused.lease_expires_at);
    const deadline = Date.now() + 5000;
    while (h.pause.state().paused && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect((await agentCall(h, rid, "chat/completions", chatRequest())).status).toBe(200);
    expect(h.pause.state()).toMatchObject({ paused: false, lease_expires_at: null });
  });

  // Agent Lightning v1.0's trainer pauses with {retry_after_seconds, reason} and never renews: its weight sync may
  // take longer than any lease, so a pause that asked for none must hold until resumed.
  it("a pause without a lease (AGL's body) holds past 300 s until resumed", async () => {
    let clockMs = Date.UTC(2026, 0, 1);
    const { h, rid } = await setup({}, 1, () => clockMs);
    const pause = await fetch(`${h.baseUrl}/proxy/pause`, {
      method: "POST",
      headers: { authorization: `Bearer ${h.key}`, "content-type": "application/json" },
      body: JSON.stringify({ retry_after_seconds: 9, reason: "scale-down" }),
    });
    expect(await pause.json()).toMatchObject({ paused: true, lease_expires_at: null });
    clockMs += 301_000;
    expect((await agentCall(h, rid, "chat/completions", chatRequest())).status).toBe(429);
    clockMs += 3_600_000;
    const state = await fetch(`${h.baseUrl}/proxy/state`, { headers: { authorization: `Bearer ${h.key}` } });
    expect(await state.json()).toMatchObject({ paused: true, reason: "scale-down", lease_expires_at: null });
    await fetch(`${h.baseUrl}/proxy/resume`, { method: "POST", headers: { authorization: `Bearer ${h.key}` } });
    expect((await agentCall(h, rid, "chat/completions", chatRequest())).status).toBe(200);
  });

  it("a pause that asks for a 300 s lease holds until 300 s, then ends by itself", async () => {
    let clockMs = Date.UTC(2026, 0, 1);
    const { h, rid } = await setup({}, 1, () => clockMs);
    const pause = await fetch(`${h.baseUrl}/proxy/pause`, {
      method: "POST",
      headers: { authorization: `Bearer ${h.key}`, "content-type": "application/json" },
      body: JSON.stringify({ reason: "update", lease_seconds: 300 }),
    });
    expect(await pause.json()).toMatchObject({ paused: true, lease_expires_at: clockMs / 1000 + 300 });
    clockMs += 299_000;
    expect((await agentCall(h, rid, "chat/completions", chatRequest())).status).toBe(429);
    clockMs += 1_000;
    expect((await agentCall(h, rid, "chat/completions", chatRequest())).status).toBe(200);
    expect(h.pause.state()).toMatchObject({ paused: false, lease_expires_at: null });
  });

  it("rejects a pause body with an unknown field (422)", async () => {
    const { h } = await setup();
    const answer = await fetch(`${h.baseUrl}/proxy/pause`, {
      method: "POST",
      headers: { authorization: `Bearer ${h.key}`, "content-type": "application/json" },
      body: JSON.stringify({ retry_after: 3 }),
    });
    expect(answer.status).toBe(422);
    expect(h.pause.state().paused).toBe(false);
  });
});
