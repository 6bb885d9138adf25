import { describe, expect, it } from "vitest";
import { setFields } from "./call-request.js";

describe("setFields", () => {
  it("keeps an integer beyond 2^53, spacing and key order, replacing only the named field", () => {
    const text = '{ "seed" : 12345678901234567890,\n  "model":"mine", "x": 1.0 }';
    expect(setFields(text, { model: "policy" })).toBe(
      '{ "seed" : 12345678901234567890,\n  "model":"policy", "x": 1.0 }',
    );
  });

  it("appends absent fields at the end in the order given", () => {
    expect(setFields('{"a":1}', { b: true, c: [1, "x"] })).toBe('{"a":1,"b":true,"c":[1,"x"]}');
    expect(setFields("{ }", { b: 2 })).toBe('{ "b":2}');
  });

  it("returns the text unchanged when there is nothing to set", () => {
    const text = '{"a": 1e400, "b": "\\u00e9"}';
    expect(setFields(text, {})).toBe(text);
  });

  it("removes a field set to undefined, wherever it stands", () => {
    expect(setFields('{"a":1, "b":2, "c":3}', { a: undefined })).toBe('{"b":2, "c":3}');
    expect(setFields('{"a":1, "b":2, "c":3}', { b: undefined })).toBe('{"a":1, "c":3}');
    expect(setFields('{"a":1, "b":2, "c":3}', { c: undefined })).toBe('{"a":1, "b":2}');
    expect(setFields('{"a":1}', { a: undefined, z: 0 })).toBe('{"z":0}');
    expect(setFields('{"a":1}', { a: undefined })).toBe("{}");
    expect(setFields('{"a":1}', { q: undefined })).toBe('{"a":1}');
  });

  it("skips braces, quotes and keys inside strings and nested values", () => {
    const text = '{"messages":[{"content":"say \\"model\\": {x}","model":"inner"}],"s":"a\\\\","model":"m"}';
    const out = setFields(text, { model: "policy" });
    expect(out).toBe(text.replace('"model":"m"', '"model":"policy"'));
    expect(JSON.parse(out).messages[0].model).toBe("inner");
  });

  it("matches keys written with escapes, and replaces every copy of a duplicated key", () => {
    expect(setFields('{"mod\\u0065l":"a","model":"b"}', { model: "p" })).toBe('{"mod\\u0065l":"p","model":"p"}');
  });

  it("gives the same value as an object spread, on random bodies", () => {
    // A seeded generator, so a failure reproduces.
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const keys = ["model", "temperature", "logprobs", "messages", "seed", "n", 'x"y', "stream"];
    const value = (depth: number): unknown => {
      const pick = rand(depth > 2 ? 4 : 6);
      if (pick === 0) return rand(1000) - 500;
      if (pick === 1) return `s${'{}[]\\",:'.charAt(rand(9))}`;
      if (pick === 2) return rand(2) === 0 ? null : true;
      if (pick === 3) return 0.5;
      if (pick === 4) return Array.from({ length: rand(3) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: rand(3) }, () => [keys[rand(keys.length)]!, value(depth + 1)]));
    };
    for (let round = 0; round < 500; round++) {
      const body = Object.fromEntries(Array.from({ length: rand(6) }, () => [keys[rand(keys.length)]!, value(0)]));
      const fields: Record<string, unknown> = {};
      for (let k = rand(4); k > 0; k--) fields[keys[rand(keys.length)]!] = rand(4) === 0 ? undefined : value(1);
      const text = JSON.stringify(body, null, rand(2) === 0 ? 0 : 2);
      const expected: Record<string, unknown> = { ...body, ...fields };
      for (const [k, v] of Object.entries(fields)) if (v === undefined) delete expected[k];
      const out = setFields(text, fields);
      expect(JSON.stringify(JSON.parse(out))).toBe(JSON.stringify(expected));
    }
  });

  it("throws TypeError for text that is not an object", () => {
    expect(() => setFields("[1]", { a: 1 })).toThrow(TypeError);
    expect(() => setFields('{"a":"open', { a: 1 })).toThrow(TypeError);
  });
});
