import { describe, expect, it } from "vitest";
import { sameMessage, sameTools } from "./message-equality.js";

const call = (args: string, id = "a") => ({ id, type: "function", function: { name: "calc", arguments: args } });

describe("sameMessage", () => {
  it("tool-call arguments compare as parsed JSON: spacing and key order do not matter", () => {
    const a = { role: "assistant", content: null, tool_calls: [call('{"x": 1, "y": [2]}')] };
    const b = { role: "assistant", content: "", tool_calls: [call('{"y":[2],"x":1}', "other-id")] };
    expect(sameMessage(a, b)).toBe(true);
  });

  it("different argument values are different turns", () => {
    const a = { role: "assistant", content: null, tool_calls: [call('{"x": 1}')] };
    expect(sameMessage(a, { ...a, tool_calls: [call('{"x": 2}')] })).toBe(false);
  });

  it("null, absent and empty content are equal; surrounding whitespace is ignored, inner whitespace is not", () => {
    expect(sameMessage({ role: "assistant", content: null }, { role: "assistant" })).toBe(true);
    expect(sameMessage({ role: "user", content: " hi\n" }, { role: "user", content: "hi" })).toBe(true);
    expect(sameMessage({ role: "user", content: "a b" }, { role: "user", content: "a  b" })).toBe(false);
  });

  it("text parts are joined; developer is system", () => {
    const parts = {
      role: "developer",
      content: [
        { type: "text", text: "be " },
        { type: "text", text: "brief" },
      ],
    };
    expect(sameMessage(parts, { role: "system", content: "be brief" })).toBe(true);
  });

  it("an assistant's leading think block is ignored, a user's is not", () => {
    const a = { role: "assistant", content: "<think>\nplan\n</think>\n\nIt is 5." };
    expect(sameMessage(a, { role: "assistant", content: "It is 5." })).toBe(true);
    expect(sameMessage({ ...a, role: "user" }, { role: "user", content: "It is 5." })).toBe(false);
  });

  it("a different number of tool calls, or a different role, is a different turn", () => {
    const one = { role: "assistant", content: null, tool_calls: [call("{}")] };
    expect(sameMessage(one, { ...one, tool_calls: [call("{}"), call("{}")] })).toBe(false);
    expect(sameMessage({ role: "user", content: "x" }, { role: "tool", content: "x" })).toBe(false);
  });
});

describe("sameTools", () => {
  it("absent, null and [] are equal; key order is ignored; a new tool is a change", () => {
    const t = { type: "function", function: { name: "calc", parameters: { type: "object" } } };
    expect(sameTools(undefined, [])).toBe(true);
    expect(sameTools(null, undefined)).toBe(true);
    expect(sameTools([t], [{ function: { parameters: { type: "object" }, name: "calc" }, type: "function" }])).toBe(
      true,
    );
    expect(sameTools([t], [t, { ...t, function: { name: "search" } }])).toBe(false);
  });
});
