/**
 * Every engine server error is JSON `{detail, code}` (unknown routes and Fastify's own client errors included, never
 * Fastify's `{message, error, statusCode}`), and chat accepts OpenAI's `developer` role as a system turn.
 */
import { afterEach, describe, expect, it } from "vitest";
import { renderChat } from "../embedded/chat-template.js";
import { ByteTokenizer } from "../embedded/tokenizer.js";
import { postJson } from "../testing/http-client.js";
import { ScriptedEngine } from "../testing/scripted-engine.js";
import { buildEngineServer } from "./app.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(): Promise<string> {
  const app = await buildEngineServer({ engine: new ScriptedEngine(256, () => [65, 66]), modelName: "m" });
  closers.push(() => app.close());
  return app.listen({ port: 0, host: "127.0.0.1" });
}

describe("engine server error shapes", () => {
  it("answers an unknown route or method with 404 {detail, code} naming it", async () => {
    const url = await serve();
    const unknown = await fetch(`${url}/v1/nope?x=1`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ detail: "Route GET /v1/nope not found", code: "not_found" });
    const wrongMethod = await fetch(`${url}/v1/chat/completions`);
    expect(wrongMethod.status).toBe(404);
    expect(await wrongMethod.json()).toEqual({ detail: "Route GET /v1/chat/completions not found", code: "not_found" });
  });

  it("answers invalid JSON and a bad body with 400 {detail, code}", async () => {
    const url = await serve();
    const badJson = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{oops",
    });
    expect(badJson.status).toBe(400);
    const body = (await badJson.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["code", "detail"]);
    expect(body.detail).toMatch(/^Invalid JSON body: /);
    const badBody = await postJson(url, "/v1/chat/completions", { messages: [{ role: "robot", content: "x" }] });
    expect(badBody.status).toBe(400);
    expect(badBody.body).toEqual({ detail: expect.stringContaining("messages.0.role"), code: "bad_request" });
  });
});

describe("the developer role", () => {
  it("is accepted in chat and tokenize and renders as a system turn", async () => {
    const url = await serve();
    const developer = [
      { role: "developer", content: "Be brief." },
      { role: "user", content: "Hi" },
    ];
    const expected = renderChat(new ByteTokenizer(), [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
    ]);
    const chat = await postJson(url, "/v1/chat/completions", { messages: developer, return_token_ids: true });
    expect(chat.status).toBe(200);
    expect(chat.body.prompt_token_ids).toEqual(expected);
    const tokenized = await postJson(url, "/tokenize", { messages: developer });
    expect(tokenized.status).toBe(200);
    expect(tokenized.body.tokens).toEqual(expected);
  });
});
