/**
 * @module `npm run bench`: runs benchmarks in bench/ in turn, each in its own process, printing its figures.
 *
 * `npm run bench` runs every one; `npm run bench -- NAME [NAME ...]` runs the named ones (a name is a file's name
 * without `.ts`, matched exactly); `npm run bench -- NAME ARGS...` runs one, given the arguments after its name (e.g.
 * `npm run bench -- proxy --paired 800 --rounds 6`). Arguments go with one benchmark only, so a flag's value that
 * happens to be a benchmark's name (`--profile engine`) is never taken for one. An unknown name, an argument before
 * any name, or arguments after several names are refused with the list of names and exit code 2; `--help` prints the
 * usage. Exit code 1 when a benchmark fails.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** One benchmark to run: its name (file without `.ts`) and its arguments. */
export interface BenchRun {
  name: string;
  args: string[];
}

/**
 * Reads `npm run bench -- …`'s arguments.
 * @param argv - the arguments after the script (not `--help`, which `main` answers)
 * @param names - every benchmark's name
 * @param readsArgs - whether a benchmark reads its command line (arguments to one that does not are refused)
 * @returns the runs in the order named; every benchmark (no arguments) when argv is empty
 * @throws {Error} an argument before any name (a misspelt name, or a flag meant for a benchmark), or arguments after
 *   more than one name, or arguments to a benchmark that reads none; the message lists the names
 */
export function parseBenchArgs(
  argv: readonly string[],
  names: readonly string[],
  readsArgs: (name: string) => boolean = () => true,
): BenchRun[] {
  if (argv.length === 0) return names.map((name) => ({ name, args: [] }));
  const first = argv[0]!;
  if (!names.includes(first)) {
    const what = first.startsWith("-")
      ? `the flag ${first} comes before any benchmark's name`
      : `no benchmark ${first}`;
    throw new Error(`npm run bench: ${what}\n${usage(names)}`);
  }
  const leading = argv.findIndex((arg) => !names.includes(arg));
  if (leading === -1) return argv.map((name) => ({ name, args: [] }));
  if (leading > 1) {
    const stray = argv[leading]!;
    const what = stray.startsWith("-")
      ? `arguments go with one benchmark: give one name, then its arguments (${stray} follows ${leading} names)`
      : `no benchmark ${stray}`;
    throw new Error(`npm run bench: ${what}\n${usage(names)}`);
  }
  if (!readsArgs(first)) {
    throw new Error(
      `npm run bench: bench/${first}.ts takes no arguments (${argv[1]}…); its settings, if any, are environment ` +
        "variables named in its header",
    );
  }
  return [{ name: first, args: argv.slice(1) }];
}

/**
 * Whether a benchmark's source reads its command line: it names `process.argv`, or calls node:util's `parseArgs`
 * (which reads `process.argv` without naming it: auth, controller, engine, gateway-api and k8s do).
 * @param source - the benchmark file's text
 */
export function readsArguments(source: string): boolean {
  return source.includes("process.argv") || source.includes("parseArgs(");
}

function usage(names: readonly string[]): string {
  return [
    "usage: npm run bench                        every benchmark",
    "       npm run bench -- NAME [NAME ...]     the named ones",
    "       npm run bench -- NAME ARGS...        one, with its arguments (e.g. proxy --help)",
    `benchmarks: ${names.join(", ")}`,
  ].join("\n");
}

function main(): void {
  const here = dirname(fileURLToPath(import.meta.url));
  const names = readdirSync(here)
    .filter((f) => f.endsWith(".ts") && f !== "run-all.ts")
    .map((f) => f.slice(0, -".ts".length))
    .sort();
  const argv = process.argv.slice(2);
  if (argv[0] === "--help" || argv[0] === "-h") {
    console.log(usage(names));
    return;
  }
  let runs: BenchRun[];
  try {
    // A benchmark that never reads its command line would run as if its arguments were not there.
    const readsArgs = (name: string): boolean => readsArguments(readFileSync(join(here, `${name}.ts`), "utf8"));
    runs = parseBenchArgs(argv, names, readsArgs);
  } catch (err) {
    console.error((err as Error).message);
    process.exit(2);
  }
  let failed = 0;
  let lastStatus = 0;
  for (const { name, args } of runs) {
    console.log(`\n=== bench/${name}.ts${args.length > 0 ? ` ${args.join(" ")}` : ""}`);
    const result = spawnSync(process.execPath, ["--import", "tsx", join(here, `${name}.ts`), ...args], {
      stdio: "inherit",
    });
    lastStatus = result.status ?? 1;
    if (result.status !== 0) {
      console.error(`bench/${name}.ts exited with ${result.status ?? result.signal}`);
      failed++;
    }
  }
  // One benchmark: its own exit code (2 for a bad flag, as when it is run directly); several: 1 if any failed.
  process.exitCode = runs.length === 1 ? lastStatus : failed > 0 ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
