/**
 * The `agent` preset (default of `arclight engine serve`) takes a framework agent's first prompt, which `tiny`
 * refuses: a system prompt plus a tool schema the way frameworks write it (`$schema`, `additionalProperties`,
 * `strict`) is over 256 byte tokens.
 */
import { afterEach, describe, expect, it } from "vitest";
import { EmbeddedEngine } from "../embedded/engine.js";
import { postJson } from "../testing/http-client.js";
import { buildEngineServer } from "./app.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const parameters = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: { city: { type: "string", description: "City name, e.g. Paris" }, unit: { enum: ["c", "f"] } },
  required: ["city", "unit"],
  additionalProperties: false,
};
const body = {
  model: "m",
  messages: [
    { role: "system", content: "You are a helpful weather assistant. Use the tools when they help. ".repeat(12) },
    { role: "user", content: "What is the weather in Paris today, in Celsius?" },
  ],
  tools: [
    { type: "function", function: { name: "get_weather", description: "Weather of a city", parameters, strict: true } },
  ],
  max_tokens: 2,
  return_token_ids: true,
};

async function serve(preset: "tiny" | "agent"): Promise<string> {
  const engine = await EmbeddedEngine.create({ config: preset, seed: 1 });
  const app = await buildEngineServer({ engine, modelName: "m" });
  closers.push(async () => {
    await app.close();
    engine.dispose();
  });
  return app.listen({ port: 0, host: "127.0.0.1" });
}

describe("model presets for framework agents", () => {
  it("agent answers a 1k-token framework prompt that tiny refuses with an OpenAI-shaped 400", async () => {
    const agent = await postJson(await serve("agent"), "/v1/chat/completions", body);
    expect(agent.status).toBe(200);
    const promptIds = (agent.body as { prompt_token_ids: number[] }).prompt_token_ids;
    expect(promptIds.length).toBeGreaterThan(1000);
    const tiny = await postJson(await serve("tiny"), "/v1/chat/completions", body);
    expect(tiny.status).toBe(400);
    expect(tiny.body).toHaveProperty("error.type", "BadRequestError");
    expect((tiny.body as { error: { message: string } }).error.message).toMatch(/context|256/);
  });
});
