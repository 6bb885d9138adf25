import Anthropic from "@anthropic-ai/sdk";
import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequestData } from "../../protocol/index.js";
import { FakeVllm, type FakeVllmBehaviour } from "../testing/fake-vllm.js";
import { EOS_ID, pyJsonDumps, tokenize } from "../testing/fake-vllm-shapes.js";
import { startProxyHarness } from "../testing/proxy-harness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const WEATHER: FakeVllmBehaviour = {
  decide: (body) =>
    (body.messages as { role: string }[]).some((m) => m.role === "tool")
      ? { content: "Sunny in Paris." }
      : { toolCalls: [{ name: "get_weather", arguments: { city: "Paris", days: 2 } }] },
};

const WEATHER_TOOL = {
  name: "get_weather",
  description: "Weather of a city",
  input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] },
};

async function setup(behaviour: FakeVllmBehaviour = {}, apiKey?: string) {
  const fake = await FakeVllm.start(behaviour);
  const h = await startProxyHarness({ models: [{ model: "policy", endpoint: fake.url }] });
  cleanups.push(async () => {
    await h.close();
    await fake.close();
  });
  const rid = await h.newRollout();
  const baseURL = `${h.baseUrl}/proxy/rollout/${rid}/attempt/0/mode/train/anthropic`;
  const client = new Anthropic({ baseURL, apiKey: apiKey ?? h.key, maxRetries: 0 });
  const recorded = async () => (await h.store.listEvents(rid)).map((e) => e.data as ModelRequestData);
  return { client, recorded };
}

type ChatBody = { choices: { token_ids: number[]; message: { tool_calls: { id: string }[] } }[] };

describe("Anthropic Messages API through the proxy (translated to chat completions)", () => {
  it("answers messages.create with x-api-key auth and records the chat call it became", async () => {
    const { client, recorded } = await setup({ content: "Bonjour 👋" });
    const message = await client.messages.create({
      model: "claude-any",
      max_tokens: 100,
      system: "Be brief",
      messages: [{ role: "user", content: "hello" }],
    });
    expect(message.content).toEqual([{ type: "text", text: "Bonjour 👋" }]);
    expect(message.stop_reason).toBe("end_turn");
    const [data] = await recorded();
    expect(data!.request).toMatchObject({
      messages: [
        { role: "system", content: "Be brief" },
        { role: "user", content: "hello" },
      ],
      max_tokens: 100,
    });
    const ids = (data!.response as ChatBody).choices[0]!.token_ids;
    expect(ids).toEqual([...tokenize("Bonjour 👋").map((t) => t.id), EOS_ID]);
    expect(message.usage.output_tokens).toBe(ids.length);
  });

  it("runs a tool loop, sending back tool_use input as the arguments text vLLM produced", async () => {
    const { client, recorded } = await setup(WEATHER);
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Weather in Paris?" }];
    const first = await client.messages.create({ model: "m", max_tokens: 200, messages, tools: [WEATHER_TOOL] });
    expect(first.stop_reason).toBe("tool_use");
    const use = first.content.find((b) => b.type === "tool_use");
    if (use?.type !== "tool_use") throw new Error("no tool_use");
    expect(use.input).toEqual({ city: "Paris", days: 2 });
    messages.push({ role: "assistant", content: first.content });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }] });
    const second = await client.messages.create({ model: "m", max_tokens: 200, messages, tools: [WEATHER_TOOL] });
    expect(second.content).toEqual([{ type: "text", text: "Sunny in Paris." }]);
    const [one, two] = await recorded();
    const callId = (one!.response as ChatBody).choices[0]!.message.tool_calls[0]!.id;
    expect(use.id).toBe(callId);
    expect((two!.request as { messages: unknown }).messages).toEqual([
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: callId,
            type: "function",
            function: { name: "get_weather", arguments: pyJsonDumps({ city: "Paris", days: 2 }) },
          },
        ],
      },
      { role: "tool", tool_call_id: callId, content: "sunny" },
    ]);
  });

  it("streams Anthropic events that the SDK assembles into the same message, recorded like non-streaming", async () => {
    const { client, recorded } = await setup(WEATHER);
    const request = { model: "m", max_tokens: 200, messages: [{ role: "user" as const, content: "Weather?" }] };
    const plain = await client.messages.create({ ...request, tools: [WEATHER_TOOL] });
    const stream = client.messages.stream({ ...request, tools: [WEATHER_TOOL] });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    const final = await stream.finalMessage();
    expect(types[0]).toBe("message_start");
    expect(types).toContain("content_block_delta");
    expect(types.slice(-2)).toEqual(["message_delta", "message_stop"]);
    expect(final.content).toEqual(plain.content);
    expect(final.stop_reason).toBe("tool_use");
    expect(final.usage.output_tokens).toBe(plain.usage.output_tokens);
    const [a, b] = await recorded();
    expect(b!.response).toEqual(a!.response);
  });

  it("answers errors in Anthropic's shape: upstream 400 and a wrong key", async () => {
    const { client } = await setup({ contextOverflow: true });
    const request = { model: "m", max_tokens: 10, messages: [{ role: "user" as const, content: "x" }] };
    await expect(client.messages.create(request)).rejects.toMatchObject({
      status: 400,
      error: { type: "error", error: { type: "invalid_request_error" } },
    });
    const { client: wrong } = await setup({}, "wrong-key");
    await expect(wrong.messages.create(request)).rejects.toMatchObject({ status: 401 });
  });
});
