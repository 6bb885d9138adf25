import { describe, expect, it } from "vitest";
import { ReasoningParserSchema, ToolParserSchema } from "../../../protocol/model.js";
import { REASONING_PARSERS } from "../../../wire/reasoning.js";
import { TOOL_CALL_PARSERS } from "../../../wire/tool-calls.js";
import { chatAnswer, chatChunks } from "./chat-answer.js";

const completion = (text: string) => ({
  id: "cmpl-abc",
  created: 1,
  model: "m",
  choices: [{ index: 0, text, finish_reason: "stop", stop_reason: null, token_ids: [1, 2], prompt_token_ids: [3] }],
  usage: { prompt_tokens: 1, total_tokens: 3, completion_tokens: 2 },
});
const messageOf = (chat: Record<string, unknown>) =>
  (chat.choices as { message: Record<string, unknown> }[])[0]!.message;
const functionOf = (chat: Record<string, unknown>) =>
  ((chat.choices as { message: { tool_calls: { function: unknown }[] } }[])[0]!.message.tool_calls ?? []).map(
    (call) => call.function,
  );

describe("tito chat answers under each model's parser", () => {
  it("offers every parser the wire module has, and none", () => {
    expect([...ToolParserSchema.options].sort()).toEqual([...Object.keys(TOOL_CALL_PARSERS), "none"].sort());
  });

  it("parses llama3_json text and sets finish_reason tool_calls", () => {
    const chat = chatAnswer(
      completion('{"name": "f", "parameters": {"x": 1}}'),
      { tool: "llama3_json", reasoning: "none" },
      false,
    );
    expect(functionOf(chat)).toEqual([{ name: "f", arguments: '{"x": 1}' }]);
    expect((chat.choices as { finish_reason: string }[])[0]!.finish_reason).toBe("tool_calls");
  });

  it("types qwen3_coder values by the agent's tool schema", () => {
    const tools = [
      { type: "function", function: { name: "f", parameters: { properties: { n: { type: "integer" } } } } },
    ];
    const text = "<tool_call>\n<function=f>\n<parameter=n>\n7\n</parameter>\n</function>\n</tool_call>";
    expect(
      functionOf(chatAnswer(completion(text), { tool: "qwen3_coder", reasoning: "none" }, false, undefined, tools)),
    ).toEqual([{ name: "f", arguments: '{"n": 7}' }]);
    expect(functionOf(chatAnswer(completion(text), { tool: "qwen3_coder", reasoning: "none" }, false))).toEqual([
      { name: "f", arguments: '{"n": "7"}' },
    ]);
  });

  it("offers every reasoning parser the wire module has, and none", () => {
    expect([...ReasoningParserSchema.options].sort()).toEqual([...Object.keys(REASONING_PARSERS), "none"].sort());
  });

  it("splits <think> text into message.reasoning, then parses tool calls in what follows", () => {
    const text =
      '<think>\nI should call f.\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>';
    const chat = chatAnswer(completion(text), { tool: "hermes", reasoning: "qwen3" }, false);
    expect(messageOf(chat)).toMatchObject({ reasoning: "\nI should call f.\n", content: null });
    expect(functionOf(chat)).toEqual([{ name: "f", arguments: '{"x": 1}' }]);
    // The ids the answer came from are answered as they were: only the text is split.
    expect((chat.choices as { token_ids: number[] }[])[0]!.token_ids).toEqual([1, 2]);
  });

  it("answers as vLLM's qwen3 and deepseek_r1 parsers do when a think tag is missing", () => {
    const unclosed = "<think>still thinking";
    expect(messageOf(chatAnswer(completion(unclosed), { tool: "none", reasoning: "qwen3" }, false))).toMatchObject({
      reasoning: null,
      content: unclosed,
    });
    expect(
      messageOf(chatAnswer(completion("2+2 is 4.</think>4"), { tool: "none", reasoning: "deepseek_r1" }, false)),
    ).toMatchObject({ reasoning: "2+2 is 4.", content: "4" });
    expect(
      messageOf(chatAnswer(completion(unclosed), { tool: "hermes", reasoning: "deepseek_r1" }, false)),
    ).toMatchObject({ reasoning: "still thinking", content: null, tool_calls: [] });
  });

  it("keeps <think> text in content without a reasoning parser", () => {
    const text = "<think>hm</think>Paris";
    expect(messageOf(chatAnswer(completion(text), { tool: "hermes", reasoning: "none" }, false))).toMatchObject({
      reasoning: null,
      content: text,
    });
  });

  it("streams the reasoning as a delta.reasoning chunk before the content", () => {
    const chat = chatAnswer(completion("<think>hm</think>Paris"), { tool: "hermes", reasoning: "qwen3" }, false);
    const deltas = chatChunks(chat, false).map((c) => (c.choices as { delta: unknown }[])[0]!.delta);
    expect(deltas).toEqual([{ role: "assistant", content: "" }, { reasoning: "hm" }, { content: "Paris" }, {}]);
  });
});
