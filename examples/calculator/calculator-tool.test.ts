import { describe, expect, it } from "vitest";
import { CALCULATOR_TOOL, CALCULATOR_TOOL_DESCRIBED, calculatorArguments, runToolCall } from "./calculator-tool.js";

describe("calculator tool call", () => {
  it("writes arguments in the json.dumps style the Hermes parser re-serialises to", () => {
    expect(calculatorArguments("12+7*3")).toBe('{"expression": "12+7*3"}');
    expect(JSON.parse(calculatorArguments('a"b'))).toEqual({ expression: 'a"b' });
  });

  it("answers a well-formed call with the calculator's result", () => {
    expect(runToolCall("calculator", '{"expression": "(12+7)*3"}')).toBe("57");
    expect(runToolCall("calculator", '{"expression":"9/0"}')).toBe("error: division by zero");
  });

  it("answers malformed calls with a short error instead of throwing", () => {
    expect(runToolCall("calculator", "{expression: 1}")).toBe("error: arguments are not JSON");
    expect(runToolCall("calculator", '{"expr": "1+1"}')).toBe('error: expected {"expression": "..."}');
    expect(runToolCall("calculator", "null")).toBe('error: expected {"expression": "..."}');
    expect(runToolCall("calculator", '{"expression": 5}')).toBe('error: expected {"expression": "..."}');
    expect(runToolCall("search", '{"expression": "1+1"}')).toBe('error: unknown tool "search"');
  });

  it("offers the same tool name in the compact and the described definition", () => {
    expect(CALCULATOR_TOOL.function.name).toBe("calculator");
    expect(CALCULATOR_TOOL_DESCRIBED.function.name).toBe("calculator");
    expect(CALCULATOR_TOOL_DESCRIBED.function.parameters.required).toEqual(["expression"]);
  });
});
