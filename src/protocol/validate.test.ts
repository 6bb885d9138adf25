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

  it("returns the parsed value when it is valid", () => {
    expect(parseOrThrow(Schema, { steps: 2, name: "a" }, "x")).toEqual({ steps: 2, name: "a" });
  });
});
