import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { ChatMessage as EngineMessage } from "../../src/engine/chat-template.js";
import { CALCULATOR_TOOL } from "./calculator-tool.js";
import { hfCodec } from "./teacher-codec-hf.js";

/** The torch engine's bundled tokenizer (512 ids, Qwen2-style template). */
const DIR = fileURLToPath(new URL("../../python/arclight_torch/assets/tokenizer/", import.meta.url));
const tools = [CALCULATOR_TOOL] as never[];

describe("teacher codec for the torch policy's tokenizer", () => {
  const codec = hfCodec(DIR, 512);
  const question: EngineMessage[] = [{ role: "user", content: "12+7*3" }];
  const call = {
    id: "c1",
    type: "function" as const,
    function: { name: "calculator", arguments: '{"expression": "12+7*3"}' },
  };

  it("writes a tool call as exactly the ids the template gives that assistant turn", () => {
    const prompt = codec.chatTemplate.render(question, { tools });
    const full = codec.chatTemplate.render([...question, { role: "assistant", content: null, tool_calls: [call] }], {
      tools,
      addGenerationPrompt: false,
    });
    const reply = codec.replyIds({ role: "assistant", content: null, tool_calls: [call] });
    expect([...prompt, ...reply]).toEqual(full.slice(0, prompt.length + reply.length));
    expect(reply.at(-1)).toBe(codec.endId);
    expect(codec.tokenizer.decode(full.slice(prompt.length + reply.length))).toBe("\n");
  });

  it("reads a tool result back from its <tool_response> user turn", () => {
    const chat: EngineMessage[] = [
      ...question,
      { role: "assistant", content: null, tool_calls: [call] },
      { role: "tool", content: "33" },
    ];
    const messages = codec.messages(codec.chatTemplate.render(chat, { tools }));
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "12+7*3"],
      ["assistant", null],
      ["tool", "33"],
    ]);
  });
});
