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

  // An error of `{detail, code}` alone is reported by the client as "503 status code (no body)".
  it("shows the gateway's detail in the client's error message", async () => {
    // No model name configured: the agent's model is looked up as it asks, and none is registered under this one.
    const h = await startProxyHarness({ options: { modelName: "" } });
    cleanups.push(() => h.close());
    const client = new OpenAI({ baseURL: h.openaiBase(await h.newRollout()), apiKey: h.key, maxRetries: 0 });
    const call = client.chat.completions.create({ model: "unregistered", messages: [{ role: "user", content: "hi" }] });
    const err = await call.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as Error).message).toMatch(/^503 No endpoint is registered for model unregistered/);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe("no_endpoint");
  });

  it("lists the configured model name at GET …/openai/v1/models, as the openai client reads it", async () => {
    const { client } = await setup("unused");
    const page = await client.models.list();
    expect(page.data.map((m) => [m.id, m.object, m.owned_by])).toEqual([["policy", "model", "arclight"]]);
    expect(Number.isInteger(page.data[0]!.created)).toBe(true);
  });
});

describe("GET …/openai/v1/models", () => {
  async function harness(modelName: string) {
    const h = await startProxyHarness({
      options: { modelName },
      models: [
        { model: "b-model", endpoint: "http://127.0.0.1:9/v1" },
        { model: "a-model", endpoint: "http://127.0.0.1:9/v1" },
        { model: "a-model", endpoint: "http://127.0.0.2:9/v1" },
      ],
    });
    cleanups.push(() => h.close());
    return { h, rid: await h.newRollout() };
  }

  const get = (url: string, key: string | null) =>
    fetch(url, { headers: key === null ? {} : { authorization: `Bearer ${key}` } });

  it("lists every registered model once when no model name is configured", async () => {
    const { h, rid } = await harness("");
    const res = await get(`${h.openaiBase(rid)}/models`, h.key);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; data: { id: string; object: string }[] };
    expect(body.object).toBe("list");
    expect(body.data.map((m) => m.id)).toEqual(["a-model", "b-model"]);
  });

  it("needs the key, a known mode and a known rollout, like the other proxy routes", async () => {
    const { h, rid } = await harness("policy");
    expect((await get(`${h.openaiBase(rid)}/models`, null)).status).toBe(401);
    expect((await get(`${h.openaiBase(rid, "0", "eval")}/models`, h.key)).status).toBe(404);
    expect((await get(`${h.openaiBase("ro-nope")}/models`, h.key)).status).toBe(404);
  });
});
