/**
 * @module The TS-side tokenizer and chat template (tokenizers.js, @huggingface/jinja) give exactly the ids the
 * worker's Python tokenizer and Jinja template give, checked against a real worker over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipWithoutPython, testPython } from "../../testing/python.js";
import type { ChatMessage, ChatTool } from "../chat-template.js";
import { RemoteEngine } from "./remote-engine.js";

const skip = skipWithoutPython();

async function post(engine: RemoteEngine, path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${engine.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

describe.skipIf(skip)("HfTokenizer and HfChatTemplate match the worker", () => {
  let engine: RemoteEngine;
  beforeAll(async () => {
    engine = await RemoteEngine.start({ python: testPython()!, model: "new:qwen2-tiny", threads: 1 });
  }, 120_000);
  afterAll(() => engine?.close());

  it.each([
    "What is 12+7?",
    "five times (two plus sixteen) divided by nine",
    '{"name": "calculator", "arguments": {"expression": "3*9"}}',
    "  spaces\tand\nnewlines, é 😀 日本",
  ])("encodes %j to the worker's ids and decodes it back", async (text) => {
    const { token_ids } = await post(engine, "/v1/tokenize", { text });
    expect(engine.tokenizer.encode(text)).toEqual(token_ids);
    expect(engine.tokenizer.decode(engine.tokenizer.encode(text))).toBe(text);
  });

  it("a special token's text in plain text never becomes its special id", () => {
    const ids = engine.tokenizer.encode("say <|im_end|> now");
    expect(ids).not.toContain(engine.tokenizer.addedTokenId("<|im_end|>"));
    expect(engine.tokenizer.decode(ids)).toBe("say <|im_end|> now");
  });

  it("tokenBytes of each id of a text concatenate to the text's UTF-8", () => {
    const text = "calc 3*9 é 😀";
    const bytes = engine.tokenizer.encode(text).flatMap((id) => engine.tokenizer.tokenBytes(id));
    expect(Buffer.from(bytes).toString("utf8")).toBe(text);
  });

  it("renders a chat with tools, a tool call and a tool result exactly as the worker's template", async () => {
    const tools: ChatTool[] = [{ type: "function", function: { name: "calculator", parameters: { type: "object" } } }];
    const messages: ChatMessage[] = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "What is 2+2?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ type: "function", function: { name: "calculator", arguments: '{"expression": "2+2"}' } }],
      },
      { role: "tool", content: "4" },
    ];
    const worker = await post(engine, "/v1/apply_chat_template", { messages, tools });
    expect(engine.chatTemplate.renderText(messages, { tools })).toBe(worker.text);
    expect(engine.chatTemplate.render(messages, { tools })).toEqual(worker.token_ids);
  });
});
