import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequestData } from "../../protocol/index.js";
import type { ProxyOptionsInput } from "../proxy/options.js";
import { FakeVllm, type FakeVllmBehaviour } from "../testing/fake-vllm.js";
import { EOS_ID, TOOL_CALL_CLOSE_ID, TOOL_CALL_OPEN_ID, tokenize } from "../testing/fake-vllm-shapes.js";
import { agentCall, chatRequest, sseData } from "../testing/proxy-client.js";
import { type ProxyHarness, startProxyHarness } from "../testing/proxy-harness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(behaviour: FakeVllmBehaviour = {}, options: ProxyOptionsInput = {}) {
  const fake = await FakeVllm.start(behaviour);
  const h = await startProxyHarness({ options, models: [{ model: "policy", endpoint: fake.url, version: 4 }] });
  cleanups.push(async () => {
    await h.close();
    await fake.close();
  });
  return { h, fake, rid: await h.newRollout() };
}

async function modelEvents(h: ProxyHarness, rid: string): Promise<ModelRequestData[]> {
  return (await h.store.listEvents(rid, { eventType: "model_request" })).map((e) => e.data as ModelRequestData);
}

interface ChatChoice {
  message: { content: string | null; tool_calls: { id: string; function: { name: string; arguments: string } }[] };
  token_ids: number[] | null;
  logprobs: { content: { logprob: number }[] } | null;
}

function firstChoice(event: ModelRequestData): ChatChoice {
  return (event.response as { choices: ChatChoice[] }).choices[0]!;
}

/**
 * The event minus what must differ between a streamed and a non-streamed call: latency, the stream flags and the
 * proxy's per-call upstream request id.
 */
function comparable(event: ModelRequestData): unknown {
  const { latency_ms: _latency, upstream_request_id: _id, request, ...rest } = event;
  const { stream: _s, stream_options: _o, ...sent } = request as Record<string, unknown>;
  return { ...rest, request: sent };
}

/** Makes the same call without and with streaming; returns both recorded events. */
async function bothWays(h: ProxyHarness, rid: string, path: string, body: Record<string, unknown>) {
  const plain = await agentCall(h, rid, path, body);
  const streamed = await agentCall(h, rid, path, { ...body, stream: true, stream_options: { include_usage: true } });
  expect([plain.status, streamed.status]).toEqual([200, 200]);
  const [a, b] = await modelEvents(h, rid);
  return { plain, streamed, a: a!, b: b! };
}

describe("model_request capture", () => {
  it("records model, version, request as sent, full response, usage, finish_reason and server", async () => {
    const { h, rid, fake } = await setup({ content: "Hello!" });
    const answer = await agentCall(h, rid, "chat/completions", chatRequest());
    const [event] = await modelEvents(h, rid);
    expect(event).toMatchObject({
      model: "policy",
      model_version: 4,
      request: fake.received[0]!.body,
      response: answer.json,
      http_status: 200,
      status: "ok",
      retry_count: 0,
      usage: (answer.json as { usage: unknown }).usage,
      finish_reason: "stop",
      server: { model: "policy", endpoint: fake.url, version: 4 },
    });
    expect(event!.latency_ms).toBeGreaterThan(0);
    expect(event!.capture_incomplete).toBeUndefined();
    const choice = firstChoice(event!);
    expect(choice.token_ids).toEqual([...tokenize("Hello!").map((t) => t.id), EOS_ID]);
    expect(choice.logprobs!.content).toHaveLength(choice.token_ids!.length);
  });

  it("records a streamed chat call exactly like the same call without streaming", async () => {
    const { h, rid } = await setup({ content: "Streaming works." });
    const { a, b, plain, streamed } = await bothWays(h, rid, "chat/completions", chatRequest());
    expect(comparable(b)).toEqual(comparable(a));
    expect(b.response).toEqual(plain.json);
    expect(streamed.events.at(-1)).toBe("[DONE]");
  });

  it("assembles usage the way vLLM counts it when the stream has no usage chunk", async () => {
    const { h, rid } = await setup({ content: "abc", tokensPerChunk: 2 });
    await agentCall(h, rid, "chat/completions", chatRequest());
    await agentCall(h, rid, "chat/completions", chatRequest({ stream: true }));
    const [a, b] = await modelEvents(h, rid);
    expect(comparable(b!)).toEqual(comparable(a!));
  });

  it("captures parallel hermes tool calls: ids include the tags and EOS, streamed equals non-streamed", async () => {
    const toolCalls = [
      { name: "get_weather", arguments: { city: "Paris" } },
      { name: "get_time", arguments: { tz: "Europe/Paris", precise: true } },
    ];
    const { h, rid } = await setup({ toolCalls });
    const { a, b, streamed } = await bothWays(h, rid, "chat/completions", chatRequest({ tools: [] }));
    expect(comparable(b)).toEqual(comparable(a));
    const choice = firstChoice(a);
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls.map((c) => [c.function.name, c.function.arguments])).toEqual([
      ["get_weather", '{"city": "Paris"}'],
      ["get_time", '{"tz": "Europe/Paris", "precise": true}'],
    ]);
    expect(choice.token_ids!.filter((id) => id === TOOL_CALL_OPEN_ID || id === TOOL_CALL_CLOSE_ID)).toHaveLength(4);
    expect(choice.token_ids!.at(-1)).toBe(EOS_ID);
    expect(choice.logprobs!.content).toHaveLength(choice.token_ids!.length);
    expect(a.finish_reason).toBe("tool_calls");
    // The stream really contained `delta: {}` chunks, whose ids are part of the capture.
    expect(streamed.events.filter((e) => e.includes('"delta":{}')).length).toBeGreaterThan(10);
  });

  it("takes emoji, CJK and curly-quote ids from token_ids, never from token strings", async () => {
    const content = "Café 😀 東京 “quoted” ‘x’";
    const { h, rid } = await setup({ content });
    const { a, b, plain } = await bothWays(h, rid, "chat/completions", chatRequest());
    expect(comparable(b)).toEqual(comparable(a));
    const expected = [...tokenize(content).map((t) => t.id), EOS_ID];
    for (const event of [a, b]) {
      expect(firstChoice(event).token_ids).toEqual(expected);
      expect(firstChoice(event).message.content).toBe(content);
    }
    expect((plain.json as { choices: ChatChoice[] }).choices[0]!.message.content).toBe(content);
  });

  it("carries a 100k-id prompt_token_ids array in the first SSE event to the agent and into the event", async () => {
    const promptTokenIds = Array.from({ length: 100_000 }, (_, i) => (i * 7919) % 150_000);
    const { h, rid } = await setup({ promptTokenIds });
    const answer = await agentCall(h, rid, "chat/completions", chatRequest({ stream: true }));
    expect(JSON.parse(answer.events[0]!).prompt_token_ids).toEqual(promptTokenIds);
    const [event] = await modelEvents(h, rid);
    expect((event!.response as { prompt_token_ids: number[] }).prompt_token_ids).toEqual(promptTokenIds);
    expect(event!.usage).toMatchObject({ prompt_tokens: 100_000 });
  });

  it("records a streamed /completions call like the non-streamed one", async () => {
    const { h, rid } = await setup({ content: " a cat." });
    const { a, b } = await bothWays(h, rid, "completions", { model: "m", prompt: [11, 12, 13], logprobs: 1 });
    expect(comparable(b)).toEqual(comparable(a));
    const choice = (a.response as { choices: { token_ids: number[]; logprobs: { token_logprobs: number[] } }[] })
      .choices[0]!;
    expect(choice.logprobs.token_logprobs).toHaveLength(choice.token_ids.length);
  });
});

describe("streaming", () => {
  it("relays chunks to the agent as they arrive, before the upstream has finished", async () => {
    // The fake holds after 3 events; the proxy passes on all but the newest (held back until the call is recorded).
    const { h, rid, fake } = await setup({ content: "slow answer", holdAfterEvents: 3 });
    const response = await fetch(`${h.openaiBase(rid)}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${h.key}`, "content-type": "application/json" },
      body: JSON.stringify(chatRequest({ stream: true })),
    });
    expect(response.headers.get("content-type")).toMatch(/text\/event-stream/);
    const reader = response.body!.getReader();
    let text = "";
    while (sseData(text).length < 2) text += new TextDecoder().decode((await reader.read()).value);
    expect(fake.heldCount).toBe(1);
    expect(await modelEvents(h, rid)).toHaveLength(0);
    fake.release();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
    expect(sseData(text).at(-1)).toBe("[DONE]");
    expect(await modelEvents(h, rid)).toHaveLength(1);
  });

  it("sends the agent an error event when the upstream dies mid-stream, records an error, and does not retry", async () => {
    const { h, rid, fake } = await setup({ content: "this will break", dieAfterEvents: 3 });
    const answer = await agentCall(h, rid, "chat/completions", chatRequest({ stream: true }));
    expect(answer.status).toBe(200);
    expect(answer.events).toHaveLength(5);
    const error = JSON.parse(answer.events[3]!);
    expect(error.error).toMatchObject({ code: 502, message: expect.stringMatching(/upstream/) });
    expect(answer.events[4]).toBe("[DONE]");
    expect(fake.received).toHaveLength(1);
    const [event] = await modelEvents(h, rid);
    expect(event).toMatchObject({ status: "error", http_status: 502, retry_count: 0 });
  });

  it("passes an upstream error event through and records the call as an error", async () => {
    const { h, rid } = await setup({ errorAfterEvents: 2 });
    const answer = await agentCall(h, rid, "chat/completions", chatRequest({ stream: true }));
    expect(JSON.parse(answer.events[2]!).error).toMatchObject({ message: "fake engine failure", code: 500 });
    const [event] = await modelEvents(h, rid);
    expect(event).toMatchObject({ status: "error", http_status: 500, error: { error: { code: 500 } } });
  });
});

describe("capture_incomplete", () => {
  it("flags a stream whose chunks lack token_ids and nulls its ids and logprobs", async () => {
    const { h, rid } = await setup({ content: "abcdef", dropTokenIdsAt: [2] });
    await agentCall(h, rid, "chat/completions", chatRequest({ stream: true }));
    const [event] = await modelEvents(h, rid);
    expect(event).toMatchObject({ status: "ok", capture_incomplete: true });
    expect(firstChoice(event!).token_ids).toBeNull();
    expect(firstChoice(event!).logprobs).toBeNull();
  });

  it("flags a stream whose logprobs do not line up with its ids and nulls the logprobs, keeping the ids", async () => {
    const { h, rid } = await setup({ content: "abcdef", dropLogprobsAt: [1] });
    await agentCall(h, rid, "chat/completions", chatRequest({ stream: true }));
    const [event] = await modelEvents(h, rid);
    expect(event!.capture_incomplete).toBe(true);
    expect(firstChoice(event!).token_ids).toEqual([...tokenize("abcdef").map((t) => t.id), EOS_ID]);
    expect(firstChoice(event!).logprobs).toBeNull();
  });

  // vLLM before PR #29074 skips tool-parser-suppressed chunks: the stream's ids and logprobs line up but are fewer
  // than usage.completion_tokens, and such a call must not be recorded complete and trained.
  it("flags a stream that lost whole chunks by its usage.completion_tokens", async () => {
    const { h, rid } = await setup({
      toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }],
      skipChunksAt: [0, 1],
    });
    const body = chatRequest({ stream: true, stream_options: { include_usage: true } });
    await agentCall(h, rid, "chat/completions", body);
    const [event] = await modelEvents(h, rid);
    expect(event).toMatchObject({
      status: "ok",
      capture_incomplete: true,
      capture_incomplete_reasons: ["usage_mismatch"],
    });
    const usage = event!.usage as { completion_tokens: number };
    expect(firstChoice(event!).token_ids).toHaveLength(usage.completion_tokens - 2);
  });

  it("flags a non-stream answer without token_ids", async () => {
    const { h, rid } = await setup({ dropTokenIdsAt: [0] });
    await agentCall(h, rid, "chat/completions", chatRequest());
    const [event] = await modelEvents(h, rid);
    expect(event).toMatchObject({ status: "ok", capture_incomplete: true });
    expect(firstChoice(event!).logprobs).toBeNull();
  });
});

describe("load", () => {
  it("records every one of 500 concurrent calls, streamed and not", async () => {
    const { h } = await setup({ content: "ok" });
    const rids = await Promise.all(Array.from({ length: 50 }, (_, i) => h.newRollout(`ro-load-${i}`)));
    const answers = await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        agentCall(h, rids[i % 50]!, "chat/completions", chatRequest({ stream: i % 3 === 0, call: i })),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(500);
    const events = (await Promise.all(rids.map((rid) => modelEvents(h, rid)))).flat();
    expect(events).toHaveLength(500);
    const calls = new Set(events.map((e) => (e.request as { call: number }).call));
    expect(calls.size).toBe(500);
    for (const event of events)
      expect(firstChoice(event).token_ids).toEqual([...tokenize("ok").map((t) => t.id), EOS_ID]);
  });
});
