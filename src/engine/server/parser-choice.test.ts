/**
 * The engine server's tool-call and reasoning parsers chosen per model (`--tool-call-parser`, `--reasoning-parser`),
 * stream and non-stream. Generated ids are scripted with a test double of `Engine`; the rest of the server is real.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ByteTokenizer } from "../embedded/tokenizer.js";
import { postJson, postSse } from "../testing/http-client.js";
import { ScriptedEngine } from "../testing/scripted-engine.js";
import { buildEngineServer } from "./app.js";

const tok = new ByteTokenizer();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(text: string, parsers: { toolCallParser?: string; reasoningParser?: string }): Promise<string> {
  const ids = [...tok.encode(text), tok.imEndId];
  const app = await buildEngineServer({ engine: new ScriptedEngine(1024, () => ids), modelName: "m", ...parsers });
  closers.push(() => app.close());
  return app.listen({ port: 0, host: "127.0.0.1" });
}

const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }];
const messages = [{ role: "user", content: "weather in Paris?" }];
const LLAMA = '{"name": "get_weather", "parameters": {"city":"Paris"}}';

describe("parser chosen per model", () => {
  it("parses llama3_json calls and splits qwen3 reasoning in a non-stream answer", async () => {
    const url = await serve(`<think>Need the weather.</think>${LLAMA}`, {
      toolCallParser: "llama3_json",
      reasoningParser: "qwen3",
    });
    const res = await postJson(url, "/v1/chat/completions", { messages, tools, max_tokens: 150 });
    const choice = res.body.choices[0];
    expect(choice.message.reasoning).toBe("Need the weather.");
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls.map((c: { function: unknown }) => c.function)).toEqual([
      { name: "get_weather", arguments: '{"city": "Paris"}' },
    ]);
    expect(choice.finish_reason).toBe("tool_calls");
  });

  it("answers reasoning without tools, and leaves tool-looking text alone when the request has no tools", async () => {
    const url = await serve(`<think>2+2=4</think>Four. ${LLAMA}`, {
      toolCallParser: "llama3_json",
      reasoningParser: "qwen3",
    });
    const res = await postJson(url, "/v1/chat/completions", { messages, max_tokens: 150 });
    const message = res.body.choices[0].message;
    expect(message.reasoning).toBe("2+2=4");
    expect(message.content).toBe(`Four. ${LLAMA}`);
    expect(message.tool_calls).toEqual([]);
  });

  it("streams the parsed message whole in the finishing chunk, ids kept in every chunk", async () => {
    const url = await serve(`<think>hm</think>${LLAMA}`, { toolCallParser: "llama3_json", reasoningParser: "qwen3" });
    const res = await postSse(url, "/v1/chat/completions", {
      messages,
      tools,
      stream: true,
      return_token_ids: true,
      max_tokens: 150,
    });
    const chunks = res.events.filter((e) => e.choices?.length);
    const last = chunks.at(-1)!.choices[0];
    expect(last.finish_reason).toBe("tool_calls");
    expect(last.delta.reasoning).toBe("hm");
    expect(last.delta.content).toBeNull();
    expect(last.delta.tool_calls[0]).toMatchObject({
      index: 0,
      type: "function",
      function: { name: "get_weather", arguments: '{"city": "Paris"}' },
    });
    for (const chunk of chunks.slice(1, -1)) expect(chunk.choices[0].delta).toEqual({});
  });

  it("keeps hermes the default and refuses an unknown parser name", async () => {
    await expect(
      buildEngineServer({ engine: new ScriptedEngine(256, () => []), modelName: "m", toolCallParser: "granite" }),
    ).rejects.toThrow(/no tool-call parser "granite"/);
  });
});
