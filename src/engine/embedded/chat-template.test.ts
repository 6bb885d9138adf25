import { describe, expect, it } from "vitest";
import { ChatMLTemplate, renderChatML } from "./chat-template.js";
import { ByteTokenizer } from "./tokenizer.js";

const tokenizer = new ByteTokenizer();

describe("renderChatML", () => {
  it("renders each message as <|im_start|>role\\ncontent<|im_end|>\\n and ends with the generation prompt", () => {
    const ids = renderChatML(tokenizer, [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
    ]);
    expect(tokenizer.decode(ids, false)).toBe(
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    );
    expect(ids[0]).toBe(tokenizer.imStartId);
    expect(ids.filter((id) => id === tokenizer.imEndId)).toHaveLength(2);
  });

  it("round-trips the worked example of the TSDoc: render -> ids -> decode", () => {
    const ids = renderChatML(
      tokenizer,
      [
        { role: "user", content: "2+2?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "calc", arguments: '{"x": "2+2"}' } }],
        },
        { role: "tool", content: "4" },
      ],
      { tools: [{ type: "function", function: { name: "calc" } }] },
    );
    expect(tokenizer.decode(ids, false)).toBe(
      '<|im_start|>system\nTools:\n{"name":"calc"}<|im_end|>\n' +
        "<|im_start|>user\n2+2?<|im_end|>\n" +
        '<|im_start|>assistant\n<tool_call>{"name": "calc", "arguments": {"x": "2+2"}}</tool_call><|im_end|>\n' +
        "<|im_start|>tool\n4<|im_end|>\n<|im_start|>assistant\n",
    );
    expect(ids.filter((id) => id === tokenizer.toolCallStartId)).toHaveLength(1);
    expect(ids.filter((id) => id === tokenizer.toolCallEndId)).toHaveLength(1);
  });

  it("keeps special-token text written by a user as plain bytes", () => {
    const ids = renderChatML(tokenizer, [{ role: "user", content: "<|im_end|>é😀" }], { addGenerationPrompt: false });
    expect(ids.filter((id) => tokenizer.isSpecial(id))).toEqual([tokenizer.imStartId, tokenizer.imEndId]);
    expect(tokenizer.decode(ids)).toBe("user\n<|im_end|>é😀\n");
  });

  it("re-renders a generated tool-call turn to exactly the ids the model produced", () => {
    const prompt = renderChatML(tokenizer, [{ role: "user", content: "weather?" }]);
    const generated = [
      ...tokenizer.encode("Checking."),
      tokenizer.toolCallStartId,
      ...tokenizer.encode('{"name": "get_weather", "arguments": {"city": "Paris"}}'),
      tokenizer.toolCallEndId,
      tokenizer.imEndId,
    ];
    const next = renderChatML(
      tokenizer,
      [
        { role: "user", content: "weather?" },
        {
          role: "assistant",
          content: "Checking.",
          tool_calls: [{ function: { name: "get_weather", arguments: '{"city": "Paris"}' } }],
        },
      ],
      { addGenerationPrompt: false },
    );
    expect(next.slice(0, prompt.length + generated.length)).toEqual([...prompt, ...generated]);
  });

  it("joins text content parts and merges a system message with the tools", () => {
    const ids = renderChatML(
      tokenizer,
      [
        {
          role: "system",
          content: [
            { type: "text", text: "A" },
            { type: "text", text: "B" },
          ],
        },
        { role: "user", content: "x" },
      ],
      {
        tools: [{ function: { name: "f", description: "d", parameters: { type: "object" } } }],
        addGenerationPrompt: false,
      },
    );
    expect(tokenizer.decode(ids)).toBe(
      "system\nAB\nTools:\n" + '{"name":"f","description":"d","parameters":{"type":"object"}}\nuser\nx\n',
    );
  });

  it("renders a developer message exactly as a system message, leading (merged with tools) or later", () => {
    const tools = [{ function: { name: "f" } }];
    const asRole = (role: "system" | "developer") =>
      renderChatML(
        tokenizer,
        [
          { role, content: "Be brief." },
          { role: "user", content: "Hi" },
          { role, content: "Now in French." },
        ],
        { tools },
      );
    expect(asRole("developer")).toEqual(asRole("system"));
    expect(tokenizer.decode(asRole("developer"), false)).toBe(
      '<|im_start|>system\nBe brief.\nTools:\n{"name":"f"}<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n' +
        "<|im_start|>system\nNow in French.<|im_end|>\n<|im_start|>assistant\n",
    );
  });
});

describe("ChatMLTemplate", () => {
  const template = new ChatMLTemplate(tokenizer);

  it("renders exactly as renderChatML, tools and generation prompt included", () => {
    const messages = [{ role: "user" as const, content: "2+2?" }];
    const options = { tools: [{ function: { name: "calc" } }], addGenerationPrompt: false };
    expect(template.render(messages, options)).toEqual(renderChatML(tokenizer, messages, options));
  });

  it("stops a turn on <|im_end|> then <|endoftext|> and delimits tool calls with the tool-call specials", () => {
    expect(template.stopTokenIds).toEqual([tokenizer.imEndId, tokenizer.eosId]);
    expect(template.toolCalls).toEqual({ startId: tokenizer.toolCallStartId, endId: tokenizer.toolCallEndId });
  });
});
