import { describe, expect, it } from "vitest";
import { pythonJsonDumps } from "./python-json.js";
import { parseHermesToolCalls, TOOL_CALL_PARSERS, toolCallParser } from "./tool-calls.js";

const ID = /^chatcmpl-tool-[0-9a-f]{16}$/;

describe("parseHermesToolCalls", () => {
  it("parses one block into a call with content null and Python-style arguments", () => {
    const parsed = parseHermesToolCalls(
      '<tool_call>{"name":"get_weather","arguments":{"city":"Paris","days":[1,2]}}</tool_call>',
    );
    expect(parsed.content).toBeNull();
    expect(parsed.toolCalls).toHaveLength(1);
    expect(parsed.toolCalls[0]?.id).toMatch(ID);
    expect(parsed.toolCalls[0]?.type).toBe("function");
    expect(parsed.toolCalls[0]?.function).toEqual({
      name: "get_weather",
      arguments: '{"city": "Paris", "days": [1, 2]}',
    });
  });

  it("parses several blocks in order and keeps the text before the first as content", () => {
    const parsed = parseHermesToolCalls(
      'Let me check.\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n<tool_call>{"name": "b", "arguments": {"x": "é"}}</tool_call>',
    );
    expect(parsed.content).toBe("Let me check.\n");
    expect(parsed.toolCalls.map((c) => c.function)).toEqual([
      { name: "a", arguments: "{}" },
      { name: "b", arguments: '{"x": "é"}' },
    ]);
    expect(parsed.toolCalls[0]?.id).not.toBe(parsed.toolCalls[1]?.id);
  });

  it("leaves the whole text as content when one block is malformed JSON", () => {
    const text = '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "argu</tool_call>';
    expect(parseHermesToolCalls(text)).toEqual({ content: text, toolCalls: [] });
  });

  it("leaves the text as content for an unterminated block or a block without a string name", () => {
    const unterminated = 'x<tool_call>{"name": "a", "arguments": {}}';
    expect(parseHermesToolCalls(unterminated)).toEqual({ content: unterminated, toolCalls: [] });
    const noName = '<tool_call>{"arguments": {}}</tool_call>';
    expect(parseHermesToolCalls(noName)).toEqual({ content: noName, toolCalls: [] });
  });

  it("returns plain text unchanged when there is no block", () => {
    expect(parseHermesToolCalls("hello")).toEqual({ content: "hello", toolCalls: [] });
  });
});

describe("pythonJsonDumps", () => {
  it("matches Python json.dumps separators and keeps non-ASCII raw", () => {
    expect(pythonJsonDumps({ a: [1, { b: null }], "k\n": "ü", t: true })).toBe(
      '{"a": [1, {"b": null}], "k\\n": "ü", "t": true}',
    );
    expect(pythonJsonDumps([])).toBe("[]");
    expect(pythonJsonDumps("s")).toBe('"s"');
  });
});

describe("toolCallParser", () => {
  it("finds a parser by vLLM's name and parses with it", () => {
    const parser = toolCallParser("hermes");
    expect(parser).toBe(TOOL_CALL_PARSERS.hermes);
    const parsed = parser.parse('Sure. <tool_call>{"name": "f", "arguments": {}}</tool_call>');
    expect(parsed.content).toBe("Sure. ");
    expect(parsed.toolCalls.map((call) => call.function)).toEqual([{ name: "f", arguments: "{}" }]);
  });

  it("refuses a name it has no parser for, naming the known ones", () => {
    expect(() => toolCallParser("granite")).toThrow(
      /no tool-call parser "granite" \(known: hermes, llama3_json, qwen3_coder, mistral, deepseek_v3, pythonic\)/,
    );
    expect(() => toolCallParser("toString")).toThrow(RangeError);
  });
});
