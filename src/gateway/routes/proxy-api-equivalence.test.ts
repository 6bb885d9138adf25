/**
 * The decision behind the Responses and Messages routes: they are translated to chat completions, so one conversation
 * is recorded the same whichever API the agent used: the same upstream chat messages and tools, the same prompt and
 * response token ids and logprobs.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequestData } from "../../protocol/index.js";
import { FakeVllm } from "../testing/fake-vllm.js";
import { type ProxyHarness, startProxyHarness } from "../testing/proxy-harness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const SYSTEM = "Be brief.";
const QUESTION = "Weather in Paris?";
const RESULT = "sunny, 21 C";
const PARAMETERS = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const DESCRIPTION = "Weather of a city";

async function viaChat(client: OpenAI): Promise<void> {
  const tools = [
    { type: "function" as const, function: { name: "get_weather", description: DESCRIPTION, parameters: PARAMETERS } },
  ];
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: QUESTION },
  ];
  const first = await client.chat.completions.create({ model: "m", messages, tools, max_tokens: 100 });
  const call = first.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
  messages.push({
    role: "assistant",
    content: null,
    tool_calls: [{ id: call.id, type: "function", function: call.function }],
  });
  messages.push({ role: "tool", tool_call_id: call.id, content: RESULT });
  await client.chat.completions.create({ model: "m", messages, tools, max_tokens: 100 });
}

async function viaResponses(client: OpenAI): Promise<void> {
  const tools = [
    { type: "function" as const, name: "get_weather", description: DESCRIPTION, parameters: PARAMETERS, strict: null },
  ];
  const body = { model: "m", instructions: SYSTEM, tools, max_output_tokens: 100 };
  const first = await client.responses.create({ ...body, input: QUESTION });
  const call = first.output.find((item) => item.type === "function_call")!;
  if (call.type !== "function_call") throw new Error("no function call");
  const input = [{ type: "function_call_output" as const, call_id: call.call_id, output: RESULT }];
  await client.responses.create({ ...body, previous_response_id: first.id, input });
}

async function viaMessages(client: Anthropic): Promise<void> {
  const tools = [
    { name: "get_weather", description: DESCRIPTION, input_schema: { ...PARAMETERS, type: "object" as const } },
  ];
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: QUESTION }];
  const body = { model: "m", system: SYSTEM, tools, max_tokens: 100 };
  const first = await client.messages.create({ ...body, messages });
  const use = first.content.find((block) => block.type === "tool_use")!;
  if (use.type !== "tool_use") throw new Error("no tool_use");
  messages.push({ role: "assistant", content: first.content });
  messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: RESULT }] });
  await client.messages.create({ ...body, messages });
}

async function recorded(h: ProxyHarness, run: (base: string) => Promise<void>) {
  const rid = await h.newRollout();
  await run(h.openaiBase(rid).replace(/\/openai\/v1$/, ""));
  return (await h.store.listEvents(rid)).map((e) => {
    const data = e.data as ModelRequestData;
    const request = data.request as Record<string, unknown>;
    const response = data.response as { prompt_token_ids: number[]; choices: Record<string, unknown>[] };
    const { token_ids, logprobs, message } = response.choices[0]! as Record<string, unknown>;
    return {
      request: { messages: request.messages, tools: request.tools, max_tokens: request.max_tokens },
      prompt_token_ids: response.prompt_token_ids,
      token_ids,
      logprobs,
      message,
    };
  });
}

describe("one conversation through chat, Responses and Anthropic Messages", () => {
  it("is recorded with the same chat messages, tools and token ids whichever API the agent used", async () => {
    const fake = await FakeVllm.start({
      decide: (body) =>
        (body.messages as { role: string }[]).some((m) => m.role === "tool")
          ? { content: "Sunny." }
          : { toolCalls: [{ name: "get_weather", arguments: { city: "Paris" } }] },
    });
    const h = await startProxyHarness({ models: [{ model: "policy", endpoint: fake.url }] });
    cleanups.push(async () => {
      await h.close();
      await fake.close();
    });
    const openai = (base: string) => new OpenAI({ baseURL: `${base}/openai/v1`, apiKey: h.key, maxRetries: 0 });
    const anthropic = (base: string) => new Anthropic({ baseURL: `${base}/anthropic`, apiKey: h.key, maxRetries: 0 });
    const chat = await recorded(h, (base) => viaChat(openai(base)));
    const responses = await recorded(h, (base) => viaResponses(openai(base)));
    const messages = await recorded(h, (base) => viaMessages(anthropic(base)));
    expect(chat).toHaveLength(2);
    expect(chat[1]!.request.messages).toHaveLength(4);
    expect(responses).toEqual(chat);
    expect(messages).toEqual(chat);
  });
});
