import { describe, expect, it } from "vitest";
import { readableJson } from "./readable-json.js";

describe("readableJson", () => {
  it("keeps arrays of scalars on one line and parses back to the same value", () => {
    const value = { rows: [{ prompt_ids: [1, 2, 3], logprobs: [-0.5, null], text: "a\nb" }], empty: [], none: {} };
    const text = readableJson(value);
    expect(text).toContain('"prompt_ids": [1, 2, 3]');
    expect(text).toContain('"logprobs": [-0.5, null]');
    expect(JSON.parse(text)).toEqual(value);
  });

  it("drops undefined properties as JSON.stringify does", () => {
    expect(JSON.parse(readableJson({ a: undefined, b: [{ c: 1 }] }))).toEqual({ b: [{ c: 1 }] });
  });
});
