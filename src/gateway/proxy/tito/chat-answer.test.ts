import { describe, expect, it } from "vitest";
import { ToolParserSchema } from "../../../protocol/model.js";
import { TOOL_CALL_PARSERS } from "../../../wire/tool-calls.js";
import { chatAnswer } from "./chat-answer.js";

const completion = (text: string) => ({
  id: "cmpl-abc",
  created: 1,
  model: "m",
  choices: [{ index: 0, text, finish_reason: "stop", stop_reason: null, token_ids: [1, 2], prompt_token_ids: [3] }],
  usage: { prompt_tokens: 1, total_tokens: 3, completion_tokens: 2 },
});
const functionOf = (chat: Record<string, unknown>) =>
  ((chat.choices as { message: { tool_calls: { function: unknown }[] } }[])[0]!.message.tool_calls ?? []).map(
    (call) => call.function,
  );

describe("tito chat answers under each model's parser", () => {
  it("offers every parser the wire module has, and none", () => {
    expect([...ToolParserSchema.options].sort()).toEqual([...Object.keys(TOOL_CALL_PARSERS), "none"].sort());
  });

  it("parses llama3_json text and sets finish_reason tool_calls", () => {
    const chat = chatAnswer(completion('{"name": "f", "parameters": {"x": 1}}'), "llama3_json", false);
    expect(functionOf(chat)).toEqual([{ name: "f", arguments: '{"x": 1}' }]);
    expect((chat.choices as { finish_reason: string }[])[0]!.finish_reason).toBe("tool_calls");
  });

  it("types qwen3_coder values by the agent's tool schema", () => {
    const tools = [
      { type: "function", function: { name: "f", parameters: { properties: { n: { type: "integer" } } } } },
    ];
    const text = "<tool_call>\n<function=f>\n<parameter=n>\n7\n</parameter>\n</function>\n</tool_call>";
    expect(functionOf(chatAnswer(completion(text), "qwen3_coder", false, undefined, tools))).toEqual([
      { name: "f", arguments: '{"n": 7}' },
    ]);
    expect(functionOf(chatAnswer(completion(text), "qwen3_coder", false))).toEqual([
      { name: "f", arguments: '{"n": "7"}' },
    ]);
  });
});
