import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequestData } from "../../protocol/index.js";
import { FakeVllm, type FakeVllmBehaviour } from "../testing/fake-vllm.js";
import { EOS_ID, pyJsonDumps, tokenize } from "../testing/fake-vllm-shapes.js";
import { startProxyHarness } from "../testing/proxy-harness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A tool loop: the model calls get_weather until a tool result is in the prompt, then answers. */
const WEATHER: FakeVllmBehaviour = {
  decide: (body) =>
    (body.messages as { role: string }[]).some((m) => m.role === "tool")
      ? { content: "Sunny in Paris." }
      : { toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }] },
};

const WEATHER_TOOL = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather of a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false,
};

async function setup(behaviour: FakeVllmBehaviour = {}) {
  const fake = await FakeVllm.start(behaviour);
  const h = await startProxyHarness({ models: [{ model: "policy", endpoint: fake.url }] });
  cleanups.push(async () => {
    await h.close();
    await fake.close();
  });
  const rid = await h.newRollout();
  const client = new OpenAI({ baseURL: h.openaiBase(rid), apiKey: h.key, maxRetries: 0 });
  const recorded = async () => (await h.store.listEvents(rid)).map((e) => e.data as ModelRequestData);
  return { h, rid, fake, client, recorded };
}

type ChatBody = { choices: { token_ids: number[]; message: { content: string | null } }[] };

describe("Responses API through the proxy (translated to chat completions)", () => {
  it("answers a non-streamed call and records the chat call it became", async () => {
    const { client, recorded } = await setup({ content: "Bonjour 👋" });
    const response = await client.responses.create({ model: "any", instructions: "Be brief", input: "hello" });
    expect(response.output_text).toBe("Bonjour 👋");
    expect(response.status).toBe("completed");
    expect(response.id).toMatch(/^resp_/);
    const [data] = await recorded();
    expect(data!.status).toBe("ok");
    expect((data!.request as { messages: unknown }).messages).toEqual([
      { role: "system", content: "Be brief" },
      { role: "user", content: "hello" },
    ]);
    const choice = (data!.response as ChatBody).choices[0]!;
    expect(choice.token_ids).toEqual([...tokenize("Bonjour 👋").map((t) => t.id), EOS_ID]);
    expect(response.usage?.output_tokens).toBe(choice.token_ids.length);
  });

  it("streams the Responses event sequence and records the stream like the non-streamed call", async () => {
    const { client, recorded } = await setup({ content: "two words" });
    await client.responses.create({ model: "any", input: "hi" });
    const stream = client.responses.stream({ model: "any", input: "hi" });
    const types: string[] = [];
    let text = "";
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") text += event.delta;
    }
    const final = await stream.finalResponse();
    expect(text).toBe("two words");
    expect(final.output_text).toBe("two words");
    expect(types.slice(0, 4)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
    ]);
    expect(types.slice(-4)).toEqual([
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const [plain, streamed] = await recorded();
    expect(streamed!.response).toEqual(plain!.response);
    expect({ ...(streamed!.request as object), stream: undefined }).toEqual({ ...(plain!.request as object) });
  });

  it("runs a tool loop with previous_response_id, recording what a chat client would have sent", async () => {
    const { client, recorded } = await setup(WEATHER);
    const first = await client.responses.create({ model: "any", input: "Weather in Paris?", tools: [WEATHER_TOOL] });
    const call = first.output.find((item) => item.type === "function_call");
    expect(call).toMatchObject({ name: "get_weather", arguments: pyJsonDumps({ city: "Paris" }) });
    if (call?.type !== "function_call") throw new Error("no function call");
    const second = await client.responses.create({
      model: "any",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny, 21 C" }],
      tools: [WEATHER_TOOL],
    });
    expect(second.output_text).toBe("Sunny in Paris.");
    const [, data] = await recorded();
    const request = data!.request as { messages: unknown; tools: unknown };
    expect(request.messages).toEqual([
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: call.call_id, type: "function", function: { name: "get_weather", arguments: call.arguments } },
        ],
      },
      { role: "tool", tool_call_id: call.call_id, content: "sunny, 21 C" },
    ]);
    expect(request.tools).toEqual([
      {
        type: "function",
        function: {
          name: "get_weather",
          description: "Weather of a city",
          parameters: WEATHER_TOOL.parameters,
          strict: false,
        },
      },
    ]);
  });

  it("streams a tool call as function_call events whose arguments join to the recorded ones", async () => {
    const { client, recorded } = await setup(WEATHER);
    const stream = client.responses.stream({ model: "any", input: "Weather?", tools: [WEATHER_TOOL] });
    let args = "";
    for await (const event of stream) if (event.type === "response.function_call_arguments.delta") args += event.delta;
    const final = await stream.finalResponse();
    const [data] = await recorded();
    const message = (
      data!.response as { choices: { message: { tool_calls: { function: { arguments: string } }[] } }[] }
    ).choices[0]!.message;
    expect(args).toBe(message.tool_calls[0]!.function.arguments);
    expect(final.output).toMatchObject([{ type: "function_call", name: "get_weather", arguments: args }]);
  });

  it("refuses an unknown previous_response_id and forgets responses made with store: false", async () => {
    const { client } = await setup();
    await expect(
      client.responses.create({ model: "any", input: "x", previous_response_id: "resp_nope" }),
    ).rejects.toMatchObject({ status: 404 });
    const unstored = await client.responses.create({ model: "any", input: "x", store: false });
    await expect(
      client.responses.create({ model: "any", input: "y", previous_response_id: unstored.id }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it("passes vLLM's OpenAI-shaped error through to the client", async () => {
    const { client, recorded } = await setup({ contextOverflow: true });
    await expect(client.responses.create({ model: "any", input: "x" })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("maximum context length"),
    });
    expect((await recorded())[0]!.status).toBe("error");
  });

  it("keeps another rollout's responses out of reach", async () => {
    const { h, client } = await setup();
    const first = await client.responses.create({ model: "any", input: "x" });
    const other = new OpenAI({ baseURL: h.openaiBase(await h.newRollout()), apiKey: h.key, maxRetries: 0 });
    await expect(
      other.responses.create({ model: "any", input: "y", previous_response_id: first.id }),
    ).rejects.toMatchObject({ status: 404 });
  });
});
