import { describe, expect, it } from "vitest";
import { CliError } from "./cli-error.js";
import { checkRunName } from "./common-flags.js";

describe("checkRunName", () => {
  it("takes one path segment of 1 to 200 letters, digits, '.', '_' or '-'", () => {
    for (const name of ["demo", "run-1.b_c", "x".repeat(200), "..."])
      expect(() => checkRunName("--name", name)).not.toThrow();
  });

  it("refuses '.', '..', separators, empty and over-long names with a message naming the flag", () => {
    for (const name of [".", "..", "a/b", "", "a b", "x".repeat(201)]) {
      expect(() => checkRunName("--name", name)).toThrow(CliError);
    }
    // Before: a 300-character name passed and crashed at mkdir with a raw ENAMETOOLONG.
    expect(() => checkRunName("--name", "y".repeat(300))).toThrow(
      `--name "${"y".repeat(60)}"… (300 characters): letters, digits, '.', '_' or '-' only, 1 to 200 of them`,
    );
  });
});
