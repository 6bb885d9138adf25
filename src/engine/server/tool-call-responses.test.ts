/**
 * Tool-call parsing in chat answers, stream and non-stream. The tiny random model never writes a tool call, so these
 * tests script the generated ids with a test double of `Engine` (the rest of the server is real).
 */
import { afterEach, describe, expect, it } from "vitest";
import { ByteTokenizer } from "../embedded/tokenizer.js";
import { postJson, postSse, streamedTokenIds } from "../testing/http-client.js";
import { ScriptedEngine } from "../testing/scripted-engine.js";
import { buildEngineServer } from "./app.js";

const tok = new ByteTokenizer();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function serve(ids: number[]): Promise<string> {
  const app = await buildEngineServer({ engine: new ScriptedEngine(256, () => ids), modelName: "m" });
  closers.push(() => app.close());
  return app.listen({ port: 0, host: "127.0.0.1" });
}

const CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}';
const callIds = (json: string) => [tok.toolCallStartId, ...tok.encode(json), tok.toolCallEndId];
const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }];
const messages = [{ role: "user", content: "weather in Paris?" }];

describe("tool calls in chat answers", () => {
  it("parses a generated block into tool_calls with content null, finish tool_calls and the raw ids kept", async () => {
    const generated = [...callIds(CALL), tok.imEndId];
    const url = await serve(generated);
    const res = await postJson(url, "/v1/chat/completions", {
      messages,
      tools,
      return_token_ids: true,
      max_tokens: 100,
    });
    const choice = res.body.choices[0];
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{16}$/),
        type: "function",
        function: { name: "get_weather", arguments: '{"city": "Paris"}' },
      },
    ]);
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.stop_reason).toBeNull();
    expect(choice.token_ids).toEqual(generated);
    expect(res.body.prompt_token_ids).toContain(tok.imStartId);
    expect(tok.decode(res.body.prompt_token_ids)).toContain('"name":"get_weather"');
  });

  it("keeps content before the first block and parses several calls", async () => {
    const generated = [
      ...tok.encode("Sure. "),
      ...callIds(CALL),
      ...callIds('{"name": "b", "arguments": {}}'),
      tok.imEndId,
    ];
    const url = await serve(generated);
    const res = await postJson(url, "/v1/chat/completions", { messages, tools, max_tokens: 120 });
    const message = res.body.choices[0].message;
    expect(message.content).toBe("Sure. ");
    expect(message.tool_calls.map((c: { function: { name: string } }) => c.function.name)).toEqual([
      "get_weather",
      "b",
    ]);
  });

  it("returns a malformed block as plain content with finish_reason stop", async () => {
    const generated = [...callIds('{"name": "get_weather", "argu'), tok.imEndId];
    const url = await serve(generated);
    const res = await postJson(url, "/v1/chat/completions", { messages, tools, max_tokens: 100 });
    const choice = res.body.choices[0];
    expect(choice.message.tool_calls).toEqual([]);
    expect(choice.message.content).toBe('<tool_call>{"name": "get_weather", "argu</tool_call>');
    expect(choice.finish_reason).toBe("stop");
  });

  it("does not parse when tool_choice is none", async () => {
    const url = await serve([...callIds(CALL), tok.imEndId]);
    const res = await postJson(url, "/v1/chat/completions", { messages, tools, tool_choice: "none", max_tokens: 100 });
    expect(res.body.choices[0].message.tool_calls).toEqual([]);
    expect(res.body.choices[0].message.content).toBe(CALL);
    expect(res.body.choices[0].finish_reason).toBe("stop");
  });

  it("streams delta {} chunks with their ids for the block and one whole tool_calls delta on </tool_call>", async () => {
    const generated = [...tok.encode("Hi"), ...callIds(CALL), tok.imEndId];
    const url = await serve(generated);
    const streamed = await postSse(url, "/v1/chat/completions", {
      messages,
      tools,
      stream: true,
      return_token_ids: true,
      logprobs: true,
      max_tokens: 100,
    });
    const chunks = streamed.events.slice(1);
    expect(streamedTokenIds(streamed.events)).toEqual(generated);
    expect(chunks).toHaveLength(generated.length);
    const deltas = chunks.map((c) => c.choices[0].delta);
    expect(deltas.slice(0, 2)).toEqual([{ content: "H" }, { content: "i" }]);
    const callDeltas = deltas.filter((d) => "tool_calls" in d);
    expect(callDeltas).toEqual([
      {
        content: null,
        tool_calls: [
          {
            index: 0,
            id: expect.stringMatching(/^chatcmpl-tool-/),
            type: "function",
            function: { name: "get_weather", arguments: '{"city": "Paris"}' },
          },
        ],
      },
    ]);
    expect(deltas.filter((d) => Object.keys(d).length === 0)).toHaveLength(generated.length - 3);
    const last = chunks.at(-1).choices[0];
    expect(last.finish_reason).toBe("tool_calls");
    expect(last.token_ids).toEqual([tok.imEndId]);
    const logprobs = chunks.flatMap((c) => c.choices[0].logprobs.content);
    expect(logprobs).toHaveLength(generated.length);
  });

  it("skips parser-suppressed chunks without return_token_ids but still sends the finishing chunk", async () => {
    const generated = [...callIds(CALL), tok.imEndId];
    const url = await serve(generated);
    const streamed = await postSse(url, "/v1/chat/completions", { messages, tools, stream: true, max_tokens: 100 });
    const chunks = streamed.events.slice(1);
    expect(chunks).toHaveLength(2); // the tool_calls delta and the finishing chunk
    expect(chunks[0].choices[0].delta.tool_calls[0].function.name).toBe("get_weather");
    expect(chunks[1].choices[0]).toEqual({
      index: 0,
      delta: {},
      logprobs: null,
      finish_reason: "tool_calls",
      stop_reason: null,
      token_ids: null,
    });
  });
});

describe("stop strings and stop ids", () => {
  it("cuts the text before a stop string but keeps the ids that formed it, stream and non-stream", async () => {
    const generated = tok.encode("abcSTOPdef");
    const url = await serve(generated);
    const request = { messages, stop: ["STOP"], max_tokens: 50, return_token_ids: true };
    const plain = await postJson(url, "/v1/chat/completions", request);
    expect(plain.body.choices[0].message.content).toBe("abc");
    expect(plain.body.choices[0].stop_reason).toBe("STOP");
    expect(plain.body.choices[0].token_ids).toEqual(tok.encode("abcSTOP"));
    const streamed = await postSse(url, "/v1/chat/completions", { ...request, stream: true });
    const text = streamed.events
      .slice(1)
      .map((c) => c.choices[0].delta.content ?? "")
      .join("");
    expect(text).toBe("abc");
    expect(streamedTokenIds(streamed.events)).toEqual(tok.encode("abcSTOP"));
  });

  it("reports a requested stop token id as stop_reason and the template's <|im_end|> as null", async () => {
    const url = await serve([65, 66, tok.toolCallEndId, 67]);
    const res = await postJson(url, "/v1/completions", {
      prompt: "x",
      stop_token_ids: [tok.toolCallEndId],
      max_tokens: 9,
    });
    expect(res.body.choices[0].stop_reason).toBe(tok.toolCallEndId);
    expect(res.body.choices[0].text).toBe("AB");
    const chat = await serve([65, tok.imEndId]);
    const answer = await postJson(chat, "/v1/chat/completions", { messages, max_tokens: 9 });
    expect(answer.body.choices[0]).toMatchObject({
      finish_reason: "stop",
      stop_reason: null,
      message: { content: "A" },
    });
  });
});
