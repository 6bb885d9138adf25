import { describe, expect, it } from "vitest";
import { jsonDepthExceeds } from "./json-depth.js";

describe("jsonDepthExceeds", () => {
  it("counts nested arrays and objects, a top-level container being depth 1", () => {
    expect(jsonDepthExceeds("{}", 1)).toBe(false);
    expect(jsonDepthExceeds('{"a":[1]}', 1)).toBe(true);
    expect(jsonDepthExceeds('{"a":[1]}', 2)).toBe(false);
    expect(jsonDepthExceeds('[[],[],{"x":{}}]', 3)).toBe(false);
    expect(jsonDepthExceeds('[[],[],{"x":{}}]', 2)).toBe(true);
    expect(jsonDepthExceeds("42", 0)).toBe(false);
  });

  it("ignores brackets inside strings, escaped quotes included", () => {
    expect(jsonDepthExceeds('{"a":"[[[[{{{{"}', 1)).toBe(false);
    expect(jsonDepthExceeds('{"a":"\\"[[[[","b":"\\\\"}', 1)).toBe(false);
    expect(jsonDepthExceeds('{"a":"\\\\",  "b":[[1]]}', 2)).toBe(true);
  });

  it("measures 100 000 nested brackets without overflowing the stack", () => {
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    expect(jsonDepthExceeds(deep, 128)).toBe(true);
    expect(jsonDepthExceeds(`${"[".repeat(128)}${"]".repeat(128)}`, 128)).toBe(false);
  });
});
