import { describe, expect, it } from "vitest";
import { TOOL_CALL_PARSERS, toolCallParser } from "../tool-calls.js";
import { parseDeepSeekV3ToolCalls } from "./deepseek-v3.js";
import { parseLlama3JsonToolCalls } from "./llama3-json.js";
import { parseMistralToolCalls } from "./mistral.js";
import { literalValue, parsePythonExpression, pyJsonDumps, pythonFloatRepr } from "./python-literal.js";
import { parsePythonicToolCalls } from "./pythonic.js";
import { parseQwen3CoderToolCalls } from "./qwen3-coder.js";

const VLLM_ID = /^chatcmpl-tool-[0-9a-f]{16}$/;
const functions = (parsed: { toolCalls: { function: unknown }[] }) => parsed.toolCalls.map((call) => call.function);

describe("llama3_json", () => {
  it("parses Llama 3.1's python_tag output with `parameters`, content null", () => {
    const parsed = parseLlama3JsonToolCalls(
      '<|python_tag|>{"name": "get_current_weather", "parameters": {"city": "San Francisco", "state": "CA", "unit": "fahrenheit"}}',
    );
    expect(parsed.content).toBeNull();
    expect(parsed.toolCalls[0]?.id).toMatch(VLLM_ID);
    expect(functions(parsed)).toEqual([
      { name: "get_current_weather", arguments: '{"city": "San Francisco", "state": "CA", "unit": "fahrenheit"}' },
    ]);
  });

  it("parses several calls separated by `; ` and drops text around them", () => {
    const parsed = parseLlama3JsonToolCalls(
      'Sure.\n{"name": "a", "arguments": {"x":[1,{"y":"é"}]}}; {"name": "b", "parameters": {}}',
    );
    expect(parsed.content).toBeNull();
    expect(functions(parsed)).toEqual([
      { name: "a", arguments: '{"x": [1, {"y": "é"}]}' },
      { name: "b", arguments: "{}" },
    ]);
  });

  it("leaves the whole text as content when an object lacks name or arguments, or does not decode", () => {
    for (const text of ['{"name": "a"}', '{"arguments": {}}', 'use {braces} like {"name": "a", "parameters": {}}']) {
      expect(parseLlama3JsonToolCalls(text)).toEqual({ content: text, toolCalls: [] });
    }
    expect(parseLlama3JsonToolCalls("no calls")).toEqual({ content: "no calls", toolCalls: [] });
  });

  it("skips an object that starts right where the previous one ends, as vLLM does", () => {
    // The second object's `{` is skipped; its inner `{}` then decodes without `name`, failing the whole parse.
    const text = '{"name": "a", "parameters": {}}{"name": "b", "parameters": {}}';
    expect(parseLlama3JsonToolCalls(text)).toEqual({ content: text, toolCalls: [] });
  });
});

describe("qwen3_coder", () => {
  const tools = [
    {
      type: "function",
      function: {
        name: "get_weather",
        parameters: {
          type: "object",
          properties: {
            city: { type: "string" },
            days: { type: "integer" },
            ratio: { type: "number" },
            metric: { type: "boolean" },
            filters: { type: "object" },
            tags: { type: "array" },
          },
        },
      },
    },
  ];
  const output =
    "I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco\n</parameter>\n" +
    "<parameter=days>\n3\n</parameter>\n<parameter=ratio>\n2.50\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n" +
    '<parameter=filters>\n{"wind": 1.5, "rain": null}\n</parameter>\n<parameter=tags>\n[\'a\', (1, -2)]\n</parameter>\n' +
    "</function>\n</tool_call>";

  it("types parameter values by the tool's schema and keeps the text before <tool_call> as content", () => {
    const parsed = parseQwen3CoderToolCalls(output, tools);
    expect(parsed.content).toBe("I'll check.\n");
    expect(parsed.toolCalls[0]?.id).toMatch(VLLM_ID);
    expect(functions(parsed)).toEqual([
      {
        name: "get_weather",
        arguments:
          '{"city": "San Francisco", "days": 3, "ratio": 2.5, "metric": true, "filters": {"wind": 1.5, "rain": null}, "tags": ["a", [1, -2]]}',
      },
    ]);
  });

  it("keeps every value a string without a schema, null excepted", () => {
    const parsed = parseQwen3CoderToolCalls(
      "<tool_call>\n<function=f>\n<parameter=n>\n3\n</parameter>\n<parameter=z>\nNULL\n</parameter>\n</function>\n</tool_call>",
    );
    expect(parsed.content).toBeNull();
    expect(functions(parsed)).toEqual([{ name: "f", arguments: '{"n": "3", "z": null}' }]);
  });

  it("reads several calls and unterminated tags, and numbers that are integral as ints", () => {
    const tool = [{ type: "function", function: { name: "g", parameters: { properties: { x: { type: "float" } } } } }];
    const parsed = parseQwen3CoderToolCalls(
      "<tool_call><function=g><parameter=x>4.0</parameter></function></tool_call><tool_call><function=g><parameter=x>1e-7",
      tool,
    );
    expect(functions(parsed)).toEqual([
      { name: "g", arguments: '{"x": 4}' },
      { name: "g", arguments: '{"x": 1e-07}' },
    ]);
  });

  it("leaves the whole text as content for a function name without '>' or no <function=", () => {
    const text = "<tool_call><function=broken</function></tool_call>";
    expect(parseQwen3CoderToolCalls(text)).toEqual({ content: text, toolCalls: [] });
    expect(parseQwen3CoderToolCalls("<tool_call>x</tool_call>")).toEqual({
      content: "<tool_call>x</tool_call>",
      toolCalls: [],
    });
  });
});

describe("mistral", () => {
  it("parses `[TOOL_CALLS] [...]` with 9-character alphanumeric ids", () => {
    const parsed = parseMistralToolCalls(
      '[TOOL_CALLS] [{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}}, {"name": "add", "arguments": {"a": 3.5, "b": 4}}]',
    );
    expect(parsed.content).toBeNull();
    expect(parsed.toolCalls.map((call) => call.id)).toEqual([
      expect.stringMatching(/^[A-Za-z0-9]{9}$/),
      expect.stringMatching(/^[A-Za-z0-9]{9}$/),
    ]);
    expect(functions(parsed)).toEqual([
      { name: "get_current_weather", arguments: '{"city": "Dallas", "state": "TX", "unit": "fahrenheit"}' },
      { name: "add", arguments: '{"a": 3.5, "b": 4}' },
    ]);
  });

  it("keeps text before the token as content and answers the text after it when nothing decodes", () => {
    const parsed = parseMistralToolCalls('Checking.[TOOL_CALLS] [{"name": "f", "arguments": {}}]');
    expect(parsed.content).toBe("Checking.");
    expect(functions(parsed)).toEqual([{ name: "f", arguments: "{}" }]);
    expect(parseMistralToolCalls("Hi [TOOL_CALLS] [{not json")).toEqual({ content: "[{not json", toolCalls: [] });
  });

  it("falls back to the first [{…}] span, accepting only arguments already written as text", () => {
    const parsed = parseMistralToolCalls('[TOOL_CALLS] sure: [{"name": "f", "arguments": "{\\"a\\": 1}"}] done');
    expect(functions(parsed)).toEqual([{ name: "f", arguments: '{"a": 1}' }]);
  });
});

describe("deepseek_v3", () => {
  const call = (name: string, args: string) =>
    `<｜tool▁call▁begin｜>function<｜tool▁sep｜>${name}\n\`\`\`json\n${args}\n\`\`\`<｜tool▁call▁end｜>`;

  it("parses the calls block, arguments passed through as written", () => {
    const text = `Let me look.<｜tool▁calls▁begin｜>${call("get_weather", '{"location":"Tokyo"}')}\n${call("get_time", '{"tz": "JST"}')}<｜tool▁calls▁end｜>`;
    const parsed = parseDeepSeekV3ToolCalls(text);
    expect(parsed.content).toBe("Let me look.");
    expect(parsed.toolCalls[0]?.id).toMatch(VLLM_ID);
    expect(functions(parsed)).toEqual([
      { name: "get_weather", arguments: '{"location":"Tokyo"}' },
      { name: "get_time", arguments: '{"tz": "JST"}' },
    ]);
  });

  it("answers the content with no calls when the block holds no well-formed call", () => {
    expect(parseDeepSeekV3ToolCalls("<｜tool▁calls▁begin｜>junk")).toEqual({ content: null, toolCalls: [] });
    expect(parseDeepSeekV3ToolCalls("plain")).toEqual({ content: "plain", toolCalls: [] });
  });
});

describe("pythonic", () => {
  it("parses a list of calls with Python literals written as json.dumps writes them", () => {
    const parsed = parsePythonicToolCalls(
      "[get_weather(city='San Francisco', metric=\"celsius\", days=3, ratio=1.0, ok=True, none=None), " +
        "get_time(tz='CET', opts={1: 'a', 'b': [1.5, 'é']}, big=100000000000000000000, tiny=1e-7)]",
    );
    expect(parsed.content).toBeNull();
    expect(parsed.toolCalls[0]?.id).toMatch(VLLM_ID);
    expect(functions(parsed)).toEqual([
      {
        name: "get_weather",
        arguments: '{"city": "San Francisco", "metric": "celsius", "days": 3, "ratio": 1.0, "ok": true, "none": null}',
      },
      {
        name: "get_time",
        arguments: '{"tz": "CET", "opts": {"1": "a", "b": [1.5, "é"]}, "big": 100000000000000000000, "tiny": 1e-07}',
      },
    ]);
  });

  it("leaves the text as content for anything but a list of literal calls", () => {
    for (const text of [
      "Hello [f(a=1)]",
      "[f(a=-1)]",
      "[f(a=x)]",
      "[f(a=(1, 2))]",
      "[f(a=1)] trailing",
      "[1, f(a=1)]",
    ]) {
      expect(parsePythonicToolCalls(text)).toEqual({ content: text, toolCalls: [] });
    }
    expect(functions(parsePythonicToolCalls("[f()]"))).toEqual([{ name: "f", arguments: "{}" }]);
  });
});

describe("python literals", () => {
  it("writes floats as Python's repr", () => {
    const cases: [number, string][] = [
      [1, "1.0"],
      [1e16, "1e+16"],
      [1e-5, "1e-05"],
      [123456.789, "123456.789"],
      [0.0001, "0.0001"],
      [-2.5, "-2.5"],
      [1.5e300, "1.5e+300"],
      [Number.POSITIVE_INFINITY, "Infinity"],
    ];
    for (const [value, text] of cases) expect(pythonFloatRepr(value)).toBe(text);
  });

  it("reads literal_eval's grammar: tuples as lists, signs, escapes, adjacent strings", () => {
    const value = literalValue(parsePythonExpression("(1, -2.0, {'a': None, \"b\": 'x\\ty' 'z'}, 0x1F)"));
    expect(pyJsonDumps(value)).toBe('[1, -2.0, {"a": null, "b": "x\\tyz"}, 31]');
    expect(() => literalValue(parsePythonExpression("name"))).toThrow();
  });
});

describe("TOOL_CALL_PARSERS", () => {
  it("holds every parser by vLLM's name", () => {
    expect(Object.keys(TOOL_CALL_PARSERS).sort()).toEqual([
      "deepseek_v3",
      "hermes",
      "llama3_json",
      "mistral",
      "pythonic",
      "qwen3_coder",
    ]);
    for (const [name, parser] of Object.entries(TOOL_CALL_PARSERS)) expect(toolCallParser(name)).toBe(parser);
  });
});
