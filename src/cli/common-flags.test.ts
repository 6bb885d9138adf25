import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CliError } from "./cli-error.js";
import { checkRunName, checkRunNameRoom, readDataFile, seedFlag } from "./common-flags.js";

describe("checkRunName", () => {
  it("takes one path segment of 1 to 200 letters, digits, '.', '_' or '-', the first a letter, digit or '_'", () => {
    for (const name of ["demo", "run-1.b_c", "x".repeat(200), "_x", "7"])
      expect(() => checkRunName("--name", name)).not.toThrow();
  });

  it("refuses '.', '..', hidden, flag-like, separators, empty and over-long names with a message naming the flag", () => {
    // `--name --quick` (the name forgotten) would start a full demo in runs/--quick, and `--name .x.lock` would make a
    // folder where the demo of `--name x` keeps its lock file.
    for (const name of [".", "..", "...", ".x.lock", "-x", "--quick", "a/b", "", "a b", "x".repeat(201)]) {
      expect(() => checkRunName("--name", name)).toThrow(CliError);
    }
    // A 300-character name would pass and crash at mkdir with a raw ENAMETOOLONG.
    expect(() => checkRunName("--name", "y".repeat(300))).toThrow(
      `--name "${"y".repeat(60)}"… (300 characters): letters, digits, '.', '_' or '-' only, 1 to 200 of them, the first a letter, digit or '_'`,
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

describe("seedFlag", () => {
  it("takes the seeds the engine's generator tells apart: 0 to the largest unsigned 32-bit integer", () => {
    expect(seedFlag("--seed", "0")).toBe(0);
    expect(seedFlag("--seed", "4294967295")).toBe(4294967295);
  });

  it("refuses a negative seed, one past 32 bits (it would alias a smaller one) and a non-integer, naming the flag", () => {
    for (const value of ["-1", "4294967296", "1.5", "0x2", ""]) {
      expect(() => seedFlag("--engine-seed", value)).toThrow(
        new CliError(`--engine-seed ${value}: expected an integer from 0 to 4294967295`),
      );
    }
  });
});

describe("checkRunNameRoom", () => {
  it("takes a name that leaves room for the longest suffix its rollout ids append", () => {
    const name = "r".repeat(190);
    expect(() => checkRunNameRoom("--name", name, [`${name}-e0-d1-1`, `${name}-v10-d2-0`])).not.toThrow();
  });

  it("refuses a longer one, naming the flag, the most characters and the longest suffix", () => {
    // "-v10-d2-0" is 9 characters: a name may have 200 - 9 = 191.
    const name = "r".repeat(192);
    expect(() => checkRunNameRoom("--name", name, [`${name}-e0-d1-1`, `${name}-v10-d2-0`])).toThrow(
      new CliError(
        `--name "${"r".repeat(60)}"… (192 characters): at most 191 characters with these settings: its rollout ids ` +
          "add up to 9 (NAME-v10-d2-0) and a rollout id has at most 200",
      ),
    );
  });
});
