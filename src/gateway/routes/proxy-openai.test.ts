import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import type { ModelRequestData } from "../../protocol/index.js";
import { FakeVllm } from "../testing/fake-vllm.js";
import { EOS_ID, tokenize } from "../testing/fake-vllm-shapes.js";
import { startProxyHarness } from "../testing/proxy-harness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(content: string) {
  const fake = await FakeVllm.start({ content });
  const h = await startProxyHarness({ models: [{ model: "policy", endpoint: fake.url }] });
  cleanups.push(async () => {
    await h.close();
    await fake.close();
  });
  const rid = await h.newRollout();
  // An unmodified agent: only its base URL and API key point at the gateway.
  const client = new OpenAI({ baseURL: h.openaiBase(rid), apiKey: h.key, maxRetries: 0 });
  return { h, rid, client };
}

describe("proxy driven by the openai npm client", () => {
  it("serves a non-streamed chat completion and records its token ids", async () => {
    const { h, rid, client } = await setup("Bonjour 👋");
    const completion = await client.chat.completions.create({
      model: "anything",
      messages: [{ role: "user", content: "hello" }],
    });
    expect(completion.choices[0]!.message.content).toBe("Bonjour 👋");
    const [event] = await h.store.listEvents(rid);
    const data = event!.data as ModelRequestData;
    expect(data.status).toBe("ok");
    const choice = (data.response as { choices: { token_ids: number[] }[] }).choices[0]!;
    expect(choice.token_ids).toEqual([...tokenize("Bonjour 👋").map((t) => t.id), EOS_ID]);
  });

  it("serves a streamed chat completion chunk by chunk and records the assembled answer", async () => {
    const { h, rid, client } = await setup("streamed “text”");
    const stream = await client.chat.completions.create({
      model: "anything",
      messages: [{ role: "user", content: "hello" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? "";
    }
    expect(text).toBe("streamed “text”");
    expect(chunks).toBeGreaterThan(10);
    const [event] = await h.store.listEvents(rid);
    const data = event!.data as ModelRequestData;
    const response = data.response as { choices: { message: { content: string } }[]; usage: unknown };
    expect(response.choices[0]!.message.content).toBe(text);
    expect(data.usage).toMatchObject({ completion_tokens: tokenize(text).length + 1 });
  });

  it("surfaces a paused gateway to the client as a 429 RateLimitError", async () => {
    const { h, client } = await setup("x");
    h.pause.pause(3, "swap");
    const call = client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
    await expect(call).rejects.toBeInstanceOf(OpenAI.RateLimitError);
  });
});
