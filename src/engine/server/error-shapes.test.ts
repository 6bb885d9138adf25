/**
 * Every engine server error is JSON in vLLM's (OpenAI's) shape `{error: {message, type, param, code}}` plus arclight's
 * `{detail, code}` (unknown routes and Fastify's own client errors included, never Fastify's
 * `{message, error, statusCode}`), and chat accepts OpenAI's `developer` role as a system turn.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { renderChatML } from "../embedded/chat-template.js";
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
  it("answers an unknown route or method with 404 naming it", async () => {
    const url = await serve();
    const unknown = await fetch(`${url}/v1/nope?x=1`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      error: { message: "Route GET /v1/nope not found", type: "NotFoundError", param: null, code: 404 },
      detail: "Route GET /v1/nope not found",
      code: "not_found",
    });
    // An over-long unknown path is quoted by its start and length, not echoed whole.
    const long = await fetch(`${url}/v1/${"x".repeat(15_000)}`);
    expect(long.status).toBe(404);
    const longDetail = ((await long.json()) as { detail: string }).detail;
    expect(longDetail).toMatch(/^Route GET \/v1\/x+… \(15004 characters\) not found$/);
    expect(longDetail.length).toBeLessThan(300);
    const wrongMethod = await fetch(`${url}/v1/chat/completions`);
    expect(wrongMethod.status).toBe(404);
    expect(await wrongMethod.json()).toMatchObject({
      detail: "Route GET /v1/chat/completions not found",
      code: "not_found",
    });
  });

  it("answers a model name it does not serve with vLLM's 404 (param model), chat and completions alike", async () => {
    const url = await serve();
    const messages = [{ role: "user", content: "x" }];
    for (const [path, body] of [
      ["/v1/chat/completions", { model: "x", messages }],
      ["/v1/completions", { model: "x", prompt: "hi" }],
    ] as const) {
      const answer = await postJson(url, path, body);
      expect(answer.status).toBe(404);
      expect((answer.body as { error: unknown }).error).toEqual({
        message: "The model `x` does not exist.",
        type: "NotFoundError",
        param: "model",
        code: 404,
      });
    }
    expect((await postJson(url, "/v1/chat/completions", { model: "m", messages })).status).toBe(200);
    expect((await postJson(url, "/v1/chat/completions", { messages })).status).toBe(200);
  });

  it("lets the openai client show the message of a refused request (not '400 status code (no body)')", async () => {
    const url = await serve();
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", maxRetries: 0 });
    const refused = client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "x" }],
      max_tokens: 100_000,
    });
    await expect(refused).rejects.toMatchObject({ status: 400, type: "BadRequestError" });
    await expect(refused).rejects.toThrow(/^400 (?!status code \(no body\)).+/);
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
    expect(Object.keys(body).sort()).toEqual(["code", "detail", "error"]);
    expect(body.detail).toMatch(/^Invalid JSON body: /);
    expect(body.error).toEqual({ message: body.detail, type: "BadRequestError", param: null, code: 400 });
    const badBody = await postJson(url, "/v1/chat/completions", { messages: [{ role: "robot", content: "x" }] });
    expect(badBody.status).toBe(400);
    expect(badBody.body).toMatchObject({ detail: expect.stringContaining("messages.0.role"), code: "bad_request" });
    expect(badBody.body).toHaveProperty("error.message", (badBody.body as { detail: string }).detail);
  });
});

describe("the developer role", () => {
  it("is accepted in chat and tokenize and renders as a system turn", async () => {
    const url = await serve();
    const developer = [
      { role: "developer", content: "Be brief." },
      { role: "user", content: "Hi" },
    ];
    const expected = renderChatML(new ByteTokenizer(), [
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
