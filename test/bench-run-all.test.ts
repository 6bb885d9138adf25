/**
 * `npm run bench`'s argument handling (`bench/run-all.ts`): names matched exactly, arguments handed to the benchmark
 * they follow, and a misspelt name or a stray flag refused with the list of names (exit code 2) before anything runs.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseBenchArgs, readsArguments } from "../bench/run-all.js";

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

  it("hands one benchmark the arguments after its name, a value that is also a name included", () => {
    expect(parseBenchArgs(["proxy", "--paired", "800", "--rounds", "6"], NAMES)).toEqual([
      { name: "proxy", args: ["--paired", "800", "--rounds", "6"] },
    ]);
    expect(parseBenchArgs(["proxy", "--profile", "engine"], NAMES)).toEqual([
      { name: "proxy", args: ["--profile", "engine"] },
    ]);
    // A benchmark that reads no arguments is not run as if they were not there.
    expect(() => parseBenchArgs(["engine", "--help"], NAMES, (name) => name === "proxy")).toThrow(
      /bench\/engine\.ts takes no arguments \(--help…\)/,
    );
  });

  it("refuses a name that is only a prefix, a misspelt name, a flag before any name, and arguments after two names", () => {
    expect(() => parseBenchArgs(["prox"], NAMES)).toThrow(
      /no benchmark prox\n.*\n[\s\S]*benchmarks: engine, engine-http, proxy/,
    );
    expect(() => parseBenchArgs(["--rounds", "2"], NAMES)).toThrow(
      /the flag --rounds comes before any benchmark's name/,
    );
    expect(() => parseBenchArgs(["engine", "store", "--rounds", "2"], NAMES)).toThrow(
      /arguments go with one benchmark: give one name, then its arguments \(--rounds follows 2 names\)/,
    );
  });

  it("as a script: exits 2 naming the unknown benchmark and runs nothing", () => {
    const script = fileURLToPath(new URL("../bench/run-all.ts", import.meta.url));
    const result = spawnSync(process.execPath, ["--import", "tsx", script, "no-such-bench"], { encoding: "utf8" });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("npm run bench: no benchmark no-such-bench");
    expect(result.stderr).toMatch(/benchmarks: .*\bproxy\b/);
    expect(result.stdout).not.toContain("=== bench/");
    const noArgs = spawnSync(process.execPath, ["--import", "tsx", script, "engine-http", "--help"], {
      encoding: "utf8",
    });
    expect(noArgs.status).toBe(2);
    expect(noArgs.stderr).toContain("bench/engine-http.ts takes no arguments");
    // bench/engine.ts reads its arguments through parseArgs, without naming process.argv.
    const engineHelp = spawnSync(process.execPath, ["--import", "tsx", script, "engine", "--help"], {
      encoding: "utf8",
    });
    expect(engineHelp.status).toBe(0);
    expect(engineHelp.stdout).toContain("--micro-batch N");
    // One benchmark's own exit code comes through (2: a bad flag), as when it is run directly.
    const badFlag = spawnSync(process.execPath, ["--import", "tsx", script, "engine", "--bogus"], { encoding: "utf8" });
    expect(badFlag.status).toBe(2);
    const help = spawnSync(process.execPath, ["--import", "tsx", script, "--help"], { encoding: "utf8" });
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run bench/);
  });

  it("counts a benchmark as reading arguments when it names process.argv or calls parseArgs", () => {
    const source = (name: string) =>
      readFileSync(fileURLToPath(new URL(`../bench/${name}.ts`, import.meta.url)), "utf8");
    expect(["proxy", "engine", "controller", "k8s"].filter((name) => !readsArguments(source(name)))).toEqual([]);
    expect(readsArguments(source("engine-http"))).toBe(false);
  });
});
