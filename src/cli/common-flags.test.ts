import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CliError } from "./cli-error.js";
import { checkRunName, readDataFile } from "./common-flags.js";

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

describe("readDataFile", () => {
  it("names the flag and the file, in words, for a file that is missing or a folder", () => {
    expect(() => readDataFile("--data", "/nonexistent/val.jsonl")).toThrow(
      new CliError("--data /nonexistent/val.jsonl: cannot read the file (ENOENT)"),
    );
    expect(() => readDataFile("--data", tmpdir())).toThrow(
      new CliError(`--data ${tmpdir()}: cannot read the file (EISDIR)`),
    );
  });

  it("keeps the reader's own message for a line that is not JSON", () => {
    const dir = mkdtempSync(join(tmpdir(), "arclight-data-"));
    const file = join(dir, "bad.jsonl");
    writeFileSync(file, "{not json}\n");
    try {
      expect(() => readDataFile("--data", file)).toThrow(/^--data .*bad\.jsonl: .*bad\.jsonl:1: not a JSON value/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
