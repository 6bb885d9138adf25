/**
 * `npm run bench`'s argument handling (`bench/run-all.ts`): names matched exactly, arguments handed to the benchmark
 * they follow, and a misspelt name or a stray flag refused with the list of names (exit code 2) before anything runs.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseBenchArgs } from "../bench/run-all.js";

const NAMES = ["engine", "engine-http", "proxy", "proxy-apis", "proxy-body", "store"];

describe("npm run bench arguments", () => {
  it("runs every benchmark without arguments, and only the exactly named ones otherwise", () => {
    expect(parseBenchArgs([], NAMES).map((r) => r.name)).toEqual(NAMES);
    expect(parseBenchArgs(["proxy"], NAMES)).toEqual([{ name: "proxy", args: [] }]);
    expect(parseBenchArgs(["engine", "store"], NAMES)).toEqual([
      { name: "engine", args: [] },
      { name: "store", args: [] },
    ]);
  });

  it("hands each benchmark the arguments that follow its name", () => {
    expect(parseBenchArgs(["proxy", "--paired", "800", "--rounds", "6", "store", "x"], NAMES)).toEqual([
      { name: "proxy", args: ["--paired", "800", "--rounds", "6"] },
      { name: "store", args: ["x"] },
    ]);
  });

  it("refuses a name that is only a prefix, a misspelt name and a flag before any name", () => {
    expect(() => parseBenchArgs(["prox"], NAMES)).toThrow(
      /no benchmark prox\n.*\nbenchmarks: engine, engine-http, proxy/,
    );
    expect(() => parseBenchArgs(["--rounds", "2"], NAMES)).toThrow(
      /the flag --rounds comes before any benchmark's name/,
    );
    expect(() => parseBenchArgs(["--help"], NAMES)).toThrow(/^usage: npm run bench/);
  });

  it("as a script: exits 2 naming the unknown benchmark and runs nothing", () => {
    const script = fileURLToPath(new URL("../bench/run-all.ts", import.meta.url));
    const result = spawnSync(process.execPath, ["--import", "tsx", script, "no-such-bench"], { encoding: "utf8" });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("npm run bench: no benchmark no-such-bench");
    expect(result.stderr).toMatch(/benchmarks: .*\bproxy\b/);
    expect(result.stdout).not.toContain("=== bench/");
  });
});
