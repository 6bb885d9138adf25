/**
 * @module `npm run bench`: runs benchmarks in bench/ in turn, each in its own process, printing its figures.
 *
 * `npm run bench` runs every one; `npm run bench -- NAME [ARGS...] [NAME [ARGS...]]` runs the named ones (a name is a
 * file's name without `.ts`, matched exactly), each given the arguments that follow its name up to the next name
 * (e.g. `npm run bench -- proxy --paired 800 --rounds 6`). An unknown name, or an argument before any name, is refused
 * with the list of names and exit code 2. Exit code 1 when a benchmark fails.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** One benchmark to run: its name (file without `.ts`) and its arguments. */
export interface BenchRun {
  name: string;
  args: string[];
}

/**
 * Reads `npm run bench -- …`'s arguments.
 * @param argv - the arguments after the script
 * @param names - every benchmark's name
 * @returns the runs in the order named; every benchmark (no arguments) when argv is empty
 * @throws {Error} an argument before any name (a misspelt name, or a flag meant for a benchmark), with the names
 */
export function parseBenchArgs(argv: readonly string[], names: readonly string[]): BenchRun[] {
  if (argv.length === 0) return names.map((name) => ({ name, args: [] }));
  if (argv[0] === "--help" || argv[0] === "-h") throw new Error(usage(names));
  const runs: BenchRun[] = [];
  for (const arg of argv) {
    if (names.includes(arg)) runs.push({ name: arg, args: [] });
    else if (runs.length > 0) runs[runs.length - 1]!.args.push(arg);
    else {
      const what = arg.startsWith("-") ? `the flag ${arg} comes before any benchmark's name` : `no benchmark ${arg}`;
      throw new Error(`npm run bench: ${what}\n${usage(names)}`);
    }
  }
  return runs;
}

function usage(names: readonly string[]): string {
  return [
    "usage: npm run bench [-- NAME [ARGS...] ...]   (no NAME: every benchmark)",
    `benchmarks: ${names.join(", ")}`,
  ].join("\n");
}

function main(): void {
  const here = dirname(fileURLToPath(import.meta.url));
  const names = readdirSync(here)
    .filter((f) => f.endsWith(".ts") && f !== "run-all.ts")
    .map((f) => f.slice(0, -".ts".length))
    .sort();
  let runs: BenchRun[];
  try {
    runs = parseBenchArgs(process.argv.slice(2), names);
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
  let failed = 0;
  for (const { name, args } of runs) {
    console.log(`\n=== bench/${name}.ts${args.length > 0 ? ` ${args.join(" ")}` : ""}`);
    const result = spawnSync(process.execPath, ["--import", "tsx", join(here, `${name}.ts`), ...args], {
      stdio: "inherit",
    });
    if (result.status !== 0) {
      console.error(`bench/${name}.ts exited with ${result.status ?? result.signal}`);
      failed++;
    }
  }
  process.exitCode = failed > 0 ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
