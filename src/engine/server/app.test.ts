/**
 * The engine server against the REAL embedded engine (tiny config, random weights, few tokens): wire shapes of vLLM
 * with `return_token_ids`, stream vs non-stream identity, bad input, tokenize, concurrency.
 */

import { tmpdir } from "node:os";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { postHalfClosed } from "../../testing/half-closed.js";
import { tempDir } from "../../testing/temp-dir.js";
import { renderChatML } from "../embedded/chat-template.js";
import { EmbeddedEngine } from "../embedded/engine.js";
import { ByteTokenizer } from "../embedded/tokenizer.js";
import { postJson, postSse, streamedTokenIds } from "../testing/http-client.js";
import { buildEngineServer } from "./app.js";

const tokenizer = new ByteTokenizer();
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function start(): Promise<{ url: string; app: FastifyInstance; engine: EmbeddedEngine }> {
  const engine = await EmbeddedEngine.create({ config: "tiny", seed: 7 });
  const app = await buildEngineServer({ engine, modelName: "tiny-test", checkpointRoot: tmpdir() });
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  closers.push(async () => {
    await app.close();
    engine.dispose();
  });
  return { url, app, engine };
}

const messages = [{ role: "user", content: "Hi" }];

describe("POST /v1/chat/completions (real engine)", () => {
  it("answers in vLLM's non-stream shape with prompt ids, token ids, logprobs and the policy version", async () => {
    const { url } = await start();
    const res = await postJson(url, "/v1/chat/completions", {
      model: "tiny-test",
      messages,
      max_tokens: 6,
      seed: 1,
      return_token_ids: true,
      logprobs: true,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-policy-version")).toBe("0");
    const body = res.body;
    expect(Object.keys(body)).toEqual([
      "id",
      "object",
      "created",
      "model",
      "choices",
      "service_tier",
      "system_fingerprint",
      "usage",
      "prompt_logprobs",
      "prompt_token_ids",
      "kv_transfer_params",
      "policy_version",
    ]);
    expect(body.id).toMatch(/^chatcmpl-[0-9a-f]{16}$/);
    expect(body.object).toBe("chat.completion");
    expect(body.model).toBe("tiny-test");
    expect(body.policy_version).toBe(0);
    expect(body.prompt_token_ids).toEqual(renderChatML(tokenizer, [{ role: "user", content: "Hi" }]));
    const choice = body.choices[0];
    expect(Object.keys(choice)).toEqual(["index", "message", "logprobs", "finish_reason", "stop_reason", "token_ids"]);
    expect(Object.keys(choice.message)).toEqual([
      "role",
      "content",
      "refusal",
      "annotations",
      "audio",
      "function_call",
      "tool_calls",
      "reasoning",
    ]);
    expect(choice.message.tool_calls).toEqual([]);
    const ids: number[] = choice.token_ids;
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.length).toBeLessThanOrEqual(6);
    expect(choice.logprobs.content).toHaveLength(ids.length);
    for (const [i, entry] of choice.logprobs.content.entries()) {
      expect(Object.keys(entry)).toEqual(["token", "logprob", "bytes", "top_logprobs"]);
      expect(entry.bytes).toEqual(tokenizer.tokenBytes(ids[i] as number));
      expect(entry.logprob).toBeLessThanOrEqual(0);
    }
    expect(choice.message.content).toBe(tokenizer.decode(ids));
    expect(["stop", "length"]).toContain(choice.finish_reason);
    expect(body.usage).toEqual({
      prompt_tokens: body.prompt_token_ids.length,
      total_tokens: body.prompt_token_ids.length + ids.length,
      completion_tokens: ids.length,
      prompt_tokens_details: null,
    });
  });

  it("sends null token ids and logprobs when not asked, as vLLM does", async () => {
    const { url } = await start();
    const res = await postJson(url, "/v1/chat/completions", { messages, max_tokens: 2 });
    expect(res.body.prompt_token_ids).toBeNull();
    expect(res.body.choices[0].token_ids).toBeNull();
    expect(res.body.choices[0].logprobs).toBeNull();
  });

  it("streams role chunk, one chunk per id, finishing and usage chunks, and [DONE]; ids equal the non-stream ids", async () => {
    const { url } = await start();
    const request = { messages, max_tokens: 6, seed: 42, return_token_ids: true, logprobs: true };
    const plain = await postJson(url, "/v1/chat/completions", request);
    const streamed = await postSse(url, "/v1/chat/completions", {
      ...request,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(streamed.headers.get("x-policy-version")).toBe("0");
    expect(streamed.done).toBe(true);
    const [role, ...rest] = streamed.events;
    expect(role.choices).toEqual([
      { index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null },
    ]);
    expect(role.prompt_token_ids).toEqual(plain.body.prompt_token_ids);
    expect(role.policy_version).toBe(0);
    const usage = rest.pop();
    const chunks = rest;
    const ids = plain.body.choices[0].token_ids;
    expect(streamedTokenIds(streamed.events)).toEqual(ids);
    expect(chunks).toHaveLength(ids.length);
    for (const chunk of chunks.slice(0, -1)) {
      expect(Object.keys(chunk.choices[0])).toEqual(["index", "delta", "logprobs", "finish_reason", "token_ids"]);
      expect(chunk.choices[0].token_ids).toHaveLength(1);
      expect(chunk).not.toHaveProperty("prompt_token_ids");
    }
    const last = chunks.at(-1).choices[0];
    expect(last.finish_reason).toBe(plain.body.choices[0].finish_reason);
    expect(last).toHaveProperty("stop_reason", null);
    const text = chunks.map((c: { choices: { delta: { content: string } }[] }) => c.choices[0]?.delta.content).join("");
    expect(text).toBe(plain.body.choices[0].message.content);
    const logprobs = chunks.flatMap(
      (c: { choices: { logprobs: { content: unknown[] } }[] }) => c.choices[0]?.logprobs.content,
    );
    expect(logprobs).toEqual(plain.body.choices[0].logprobs.content);
    expect(usage).toEqual({
      id: role.id,
      object: "chat.completion.chunk",
      created: role.created,
      model: "tiny-test",
      choices: [],
      usage: {
        prompt_tokens: role.prompt_token_ids.length,
        total_tokens: role.prompt_token_ids.length + ids.length,
        completion_tokens: ids.length,
      },
    });
  });

  it("answers a request whose client half-closes after sending it (nc -N)", async () => {
    const { url } = await start();
    const body = JSON.stringify({ model: "tiny-test", messages, max_tokens: 6, seed: 1 });
    // The whole request, then the client's side of the connection ended: the answer must still come back.
    const answer = await postHalfClosed(url, "/v1/chat/completions", body);
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    const json = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { choices: unknown[] };
    expect(json.choices).toHaveLength(1);
  });

  it("generates n choices with distinct seeds in one request", async () => {
    const { url } = await start();
    const res = await postJson(url, "/v1/chat/completions", {
      messages,
      max_tokens: 8,
      n: 2,
      seed: 5,
      return_token_ids: true,
    });
    expect(res.body.choices.map((c: { index: number }) => c.index)).toEqual([0, 1]);
    expect(res.body.choices[0].token_ids).not.toEqual(res.body.choices[1].token_ids);
  });

  it("answers 400 with vLLM's context-length message when the prompt does not fit", async () => {
    const { url } = await start();
    const long = await postJson(url, "/v1/chat/completions", {
      messages: [{ role: "user", content: "x".repeat(400) }],
    });
    expect(long.status).toBe(400);
    expect(long.body.detail).toMatch(
      /^This model's maximum context length is 256 tokens\. However, your request has \d+ input tokens/,
    );
    const tooMany = await postJson(url, "/v1/chat/completions", { messages, max_tokens: 250 });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.detail).toMatch(
      /^This model's maximum context length is 256 tokens\. However, you requested \d+ tokens \(\d+ in the messages, 250 in the completion\)/,
    );
  });

  it("answers 400 naming the field for malformed messages", async () => {
    const { url } = await start();
    const badRole = await postJson(url, "/v1/chat/completions", { messages: [{ role: "robot", content: "x" }] });
    expect(badRole.status).toBe(400);
    expect(badRole.body.detail).toContain("messages.0");
    const empty = await postJson(url, "/v1/chat/completions", { messages: [] });
    expect(empty.status).toBe(400);
    expect(empty.body.detail).toContain("messages");
  });

  it("answers every one of 8 concurrent requests, each with its own seeded ids", async () => {
    const { url } = await start();
    const request = (seed: number) =>
      postJson(url, "/v1/chat/completions", { messages, max_tokens: 5, seed, return_token_ids: true });
    const answers = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map(request));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    const alone = await request(3);
    expect(answers[2]?.body.choices[0].token_ids).toEqual(alone.body.choices[0].token_ids);
  });
});

describe("POST /v1/completions (real engine)", () => {
  it("echoes a token-id prompt per choice and answers in vLLM's non-stream shape", async () => {
    const { url } = await start();
    const prompt = [72, 105, 33];
    const res = await postJson(url, "/v1/completions", {
      prompt,
      max_tokens: 4,
      seed: 2,
      logprobs: 0,
      return_token_ids: true,
    });
    expect(res.status).toBe(200);
    const body = res.body;
    expect(body.id).toMatch(/^cmpl-[0-9a-f]{16}$/);
    expect(Object.keys(body)).toEqual([
      "id",
      "object",
      "created",
      "model",
      "choices",
      "service_tier",
      "system_fingerprint",
      "usage",
      "kv_transfer_params",
      "policy_version",
    ]);
    const choice = body.choices[0];
    expect(Object.keys(choice)).toEqual([
      "index",
      "text",
      "logprobs",
      "finish_reason",
      "stop_reason",
      "token_ids",
      "prompt_logprobs",
      "prompt_token_ids",
    ]);
    expect(choice.prompt_token_ids).toEqual(prompt);
    expect(choice.logprobs.token_logprobs).toHaveLength(choice.token_ids.length);
    // Each token string is made of its own id's bytes, joined onto bytes before it only to complete a character.
    choice.logprobs.tokens.forEach((token: string, i: number) => {
      const upToHere = Buffer.from(choice.token_ids.slice(0, i + 1).flatMap((id: number) => tokenizer.tokenBytes(id)));
      const own = Buffer.from(token, "utf8");
      expect(token).not.toContain("\uFFFD");
      expect(upToHere.subarray(upToHere.length - own.length)).toEqual(own);
    });
    expect(choice.logprobs.text_offset[0]).toBe(0);
    expect(body.usage.prompt_tokens).toBe(3);
  });

  it("streams the same ids as the non-stream answer, prompt ids only in the first chunk", async () => {
    const { url } = await start();
    const request = { prompt: "Hello", max_tokens: 5, seed: 9, logprobs: 1, return_token_ids: true };
    const plain = await postJson(url, "/v1/completions", request);
    const streamed = await postSse(url, "/v1/completions", { ...request, stream: true });
    expect(streamed.done).toBe(true);
    expect(streamedTokenIds(streamed.events)).toEqual(plain.body.choices[0].token_ids);
    expect(streamed.events[0].choices[0].prompt_token_ids).toEqual(tokenizer.encode("Hello"));
    for (const event of streamed.events.slice(1)) expect(event.choices[0].prompt_token_ids).toBeNull();
    for (const event of streamed.events) expect(event.usage).toBeNull();
    expect(streamed.events.map((e) => e.choices[0].text).join("")).toBe(plain.body.choices[0].text);
    expect(streamed.events.at(-1).choices[0].finish_reason).toBe(plain.body.choices[0].finish_reason);
  });

  it("runs a list of prompts with index = prompt x n + choice and counts each prompt once", async () => {
    const { url } = await start();
    const res = await postJson(url, "/v1/completions", {
      prompt: ["ab", "cde"],
      n: 2,
      max_tokens: 2,
      return_token_ids: true,
    });
    expect(res.body.choices.map((c: { index: number }) => c.index)).toEqual([0, 1, 2, 3]);
    expect(res.body.choices[2].prompt_token_ids).toEqual(tokenizer.encode("cde"));
    expect(res.body.usage.prompt_tokens).toBe(5);
  });

  it("answers 400 for a prompt longer than the context and for an out-of-vocabulary id", async () => {
    const { url } = await start();
    const long = await postJson(url, "/v1/completions", { prompt: "y".repeat(300) });
    expect(long.status).toBe(400);
    expect(long.body.detail).toContain("maximum context length is 256 tokens");
    const bad = await postJson(url, "/v1/completions", { prompt: [1, 9999] });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain("9999");
  });
});

describe("tokenize, detokenize, models (real engine)", () => {
  it("tokenizes messages exactly as a chat request's prompt_token_ids and detokenizes back", async () => {
    const { url } = await start();
    const chat = await postJson(url, "/v1/chat/completions", { messages, max_tokens: 1, return_token_ids: true });
    const tokenized = await postJson(url, "/tokenize", { messages });
    expect(tokenized.body).toEqual({
      count: chat.body.prompt_token_ids.length,
      max_model_len: 256,
      tokens: chat.body.prompt_token_ids,
      token_strs: null,
    });
    const detok = await postJson(url, "/detokenize", { tokens: tokenized.body.tokens });
    expect(detok.body.prompt).toBe("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    const plain = await postJson(url, "/tokenize", { prompt: "é" });
    expect(plain.body.tokens).toEqual([0xc3, 0xa9]);
  });

  it("lists the served model with its context length", async () => {
    const { url } = await start();
    const res = await fetch(`${url}/v1/models`);
    const body = (await res.json()) as { object: string; data: unknown[] };
    expect(body.object).toBe("list");
    expect(body.data[0]).toMatchObject({ id: "tiny-test", object: "model", max_model_len: 256 });
  });
});

describe("POST /v1/load_weights (real engine)", () => {
  it("hot-swaps to a saved checkpoint: version bumps and greedy ids become the checkpoint model's", async () => {
    const { url } = await start();
    const other = await EmbeddedEngine.create({ config: "tiny", seed: 8 });
    closers.push(async () => other.dispose());
    const dir = tempDir("arclight-engine-ckpt-");
    await other.saveCheckpoint(dir);
    const prompt = [...tokenizer.encode("Hello")];
    const greedy = { prompt, max_tokens: 8, temperature: 0, return_token_ids: true };
    const before = await postJson(url, "/v1/completions", greedy);
    expect(before.body.policy_version).toBe(0);
    const load = await postJson(url, "/v1/load_weights", { path: dir });
    expect(load.body).toEqual({ status: "ok", policy_version: 1 });
    const after = await postJson(url, "/v1/completions", greedy);
    expect(after.headers.get("x-policy-version")).toBe("1");
    expect(after.body.policy_version).toBe(1);
    const sampling = { temperature: 0, topP: 1, topK: 0, maxTokens: 8, stopTokenIds: [tokenizer.eosId], stop: [] };
    const [expected] = await other.generate([{ promptTokenIds: prompt, sampling }]);
    expect(after.body.choices[0].token_ids).toEqual(expected?.tokenIds);
    expect(after.body.choices[0].token_ids).not.toEqual(before.body.choices[0].token_ids);
  });

  it("answers 400 for a checkpoint of another model shape and keeps serving the old weights", async () => {
    const { url } = await start();
    const small = await EmbeddedEngine.create({
      config: { vocab: 261, d_model: 32, n_layers: 1, n_heads: 2, context: 64 },
    });
    closers.push(async () => small.dispose());
    const dir = tempDir("arclight-engine-ckpt-");
    await small.saveCheckpoint(dir);
    const load = await postJson(url, "/v1/load_weights", { path: dir });
    expect(load.status).toBe(400);
    expect(load.body.detail).toContain(dir);
    const after = await postJson(url, "/v1/completions", { prompt: "a", max_tokens: 2 });
    expect(after.status).toBe(200);
    expect(after.body.policy_version).toBe(0);
  });
});
