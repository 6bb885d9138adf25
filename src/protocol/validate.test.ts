/** `parseOrThrow`: every issue named by its path, in words a user reads (HTTP 422 details and CLI config errors). */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ValidationFailed } from "./errors.js";
import { parseOrThrow } from "./validate.js";

const Schema = z.strictObject({ steps: z.number().int().min(1), name: z.string() });

function failure(value: unknown): ValidationFailed {
  try {
    parseOrThrow(Schema, value, "trainer config", ["body"]);
  } catch (err) {
    if (err instanceof ValidationFailed) return err;
    throw err;
  }
  throw new Error("parsed");
}

describe("parseOrThrow", () => {
  it("says 'expected an integer' for a fractional number, not zod's 'expected int, received number'", () => {
    const err = failure({ steps: 1.5, name: "a" });
    expect(err.message).toBe("trainer config: steps: expected an integer");
    expect(err.issues).toEqual([{ loc: ["body", "steps"], msg: "expected an integer", type: "invalid_type" }]);
  });

  it("lists every issue, unknown keys by name, with the loc prefix kept out of the message", () => {
    const err = failure({ steps: 0, name: 3, extra: true });
    expect(err.message).toBe(
      "trainer config: steps: Too small: expected number to be >=1; name: Invalid input: expected string, received number; (root): unknown field(s): extra",
    );
  });

  it("keeps a failure small whatever the input: long names clipped, unknown fields and issues counted past a few", () => {
    const long = "k".repeat(5000);
    const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`x${i}`, 1]));
    const err = failure({ steps: 1, name: "a", [long]: 1, ...many });
    expect(err.message).toContain(`unknown field(s): ${"k".repeat(100)}… (5000 characters), x0, x1,`);
    expect(err.message).toMatch(/x8, and 21 more$/);
    expect(err.message.length).toBeLessThan(400);
    const Rows = z.record(z.string(), z.number());
    let rows: ValidationFailed | undefined;
    try {
      parseOrThrow(Rows, Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`${long}${i}`, "x"])), "rows");
    } catch (e) {
      rows = e as ValidationFailed;
    }
    expect(rows!.issues.length).toBeGreaterThan(40); // as many as 8,000 characters of msg and loc take
    expect(rows!.issues.length).toBeLessThanOrEqual(50);
    expect(rows!.issues[0]!.loc).toEqual([`${"k".repeat(100)}… (5001 characters)`]);
    expect(rows!.message).toMatch(/; and 490 more issue\(s\)$/);
    expect(JSON.stringify(rows!.issues).length).toBeLessThan(20_000);
    // A hundred items, each with twelve long unknown keys: every cap above holds, and the whole stays small too.
    const Items = z.array(z.strictObject({ input: z.number() }));
    const items = Array.from({ length: 100 }, (_, i) =>
      Object.fromEntries([["input", 1], ...Array.from({ length: 12 }, (_, k) => [`${"u".repeat(150)}${i}-${k}`, 1])]),
    );
    let wide: ValidationFailed | undefined;
    try {
      parseOrThrow(Items, items, "rollout create", ["body"]);
    } catch (e) {
      wide = e as ValidationFailed;
    }
    expect(JSON.stringify({ detail: wide!.issues }).length).toBeLessThan(10_000);
    expect(wide!.message.length).toBeLessThan(2_100);
    expect(wide!.message).toMatch(/; and \d+ more issue\(s\)$/);
  });

  it("returns the parsed value when it is valid", () => {
    expect(parseOrThrow(Schema, { steps: 2, name: "a" }, "x")).toEqual({ steps: 2, name: "a" });
  });
});
