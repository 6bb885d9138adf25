/**
 * @module What several commands check the same way: integer and preset flags, `--log-level`, data files, run names, and
 * Ctrl-C/SIGTERM (first signal: stop cleanly; second: exit at once).
 */
import type { ModelPreset } from "../engine/embedded/config.js";
import { MAX_SEED } from "../engine/embedded/rng.js";
import { MAX_ROLLOUT_ID_LENGTH } from "../protocol/index.js";
import { EMBEDDED_PRESETS } from "../run/engine-factory.js";
import { type DataItem, readJsonl } from "../trainer/data-order.js";
import { maxRunNameLength } from "../trainer/run-name-room.js";
import { CliError } from "./cli-error.js";

/** pino's levels, from most to least severe, then `silent`. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/** A decimal integer as a user writes one: optional sign, digits; no spaces, hex, exponent or fraction. */
const DECIMAL_INTEGER = /^[+-]?\d+$/;

/**
 * The integer a flag value writes in decimal, or undefined when it is not one (` 2`, `0x2`, `1e3`, `2.0`, and
 * integers beyond ±2^53 − 1 are not).
 * @param value - what the user wrote
 */
export function decimalInteger(value: string): number | undefined {
  if (!DECIMAL_INTEGER.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * A positive integer flag value, in decimal.
 * @param flag - the flag's name, e.g. `--steps`
 * @param value - what the user wrote
 * @returns the integer
 * @throws {CliError} naming the flag
 */
export function positiveInt(flag: string, value: string): number {
  const n = decimalInteger(value);
  if (n === undefined || n < 1) throw new CliError(`${flag} ${value}: expected a positive integer`);
  return n;
}

/**
 * An embedded model preset flag value.
 * @param flag - the flag's name, e.g. `--preset`
 * @param value - what the user wrote
 * @returns the preset
 * @throws {CliError} naming the flag and the presets
 */
export function presetFlag(flag: string, value: string): ModelPreset {
  const preset = EMBEDDED_PRESETS.find((p) => p === value);
  if (preset === undefined) throw new CliError(`${flag} ${value}: expected one of ${EMBEDDED_PRESETS.join(", ")}`);
  return preset;
}

/**
 * A seed flag value: a decimal integer from zero to {@link MAX_SEED}, the seeds the engine's generator tells apart
 * (a negative or a larger seed would silently give the same weights as one in that range).
 * @param flag - the flag's name, e.g. `--seed`
 * @param value - what the user wrote
 * @returns the seed
 * @throws {CliError} naming the flag and the range
 */
export function seedFlag(flag: string, value: string): number {
  const n = decimalInteger(value);
  if (n === undefined || n < 0 || n > MAX_SEED) {
    throw new CliError(`${flag} ${value}: expected an integer from 0 to ${MAX_SEED}`);
  }
  return n;
}

/**
 * A `--log-level` value.
 * @param value - what the user wrote
 * @returns the level, one of {@link LOG_LEVELS}
 * @throws {CliError} naming the flag and the levels
 */
export function logLevel(value: string): (typeof LOG_LEVELS)[number] {
  const level = LOG_LEVELS.find((l) => l === value);
  if (level === undefined) throw new CliError(`--log-level ${value}: expected one of ${LOG_LEVELS.join(", ")}`);
  return level;
}

/**
 * Reads a JSONL data file.
 * @param what - how the user named it, e.g. `--data` or `data.train_path`
 * @param path - the file
 * @returns its inputs
 * @throws {CliError} naming `what` and the path when the file is missing or a line is not JSON
 */
export function readDataFile(what: string, path: string): DataItem[] {
  try {
    return readJsonl(path);
  } catch (err) {
    // A system error (ENOENT, EISDIR, EACCES) in the words the other file flags use, not Node's text.
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === undefined ? (err as Error).message : `cannot read the file (${code})`;
    throw new CliError(`${what} ${path}: ${reason}`);
  }
}

/**
 * A run name: one path segment under runs/ (letters, digits, '.', '_', '-'), at most 200 characters (a file name may
 * have 255 bytes, and runs/NAME holds files named after it), starting with a letter, digit or '_': never `.` or `..`,
 * no hidden folder (the demo's lock files are `runs/.NAME.lock`), and no name a flag could be taken for (`--name -x`,
 * or `--name --quick` with the name forgotten).
 */
export const RUN_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/;

/**
 * Checks a run name.
 * @param what - how the user gave it, e.g. `--name` or `name (in config.yaml)`
 * @param name - the name
 * @throws {CliError} naming `what` when the name is not {@link RUN_NAME}
 */
export function checkRunName(what: string, name: string): void {
  if (!RUN_NAME.test(name)) {
    throw new CliError(
      `${what} ${shownName(name)}: letters, digits, '.', '_' or '-' only, 1 to 200 of them, the first a letter, ` +
        "digit or '_'",
    );
  }
}

/** A name as an error message shows it: quoted, a long one cut, with its length. */
function shownName(name: string): string {
  return name.length > 60 ? `${JSON.stringify(name.slice(0, 60))}… (${name.length} characters)` : JSON.stringify(name);
}

/**
 * Checks that a run name leaves room for the suffixes its rollout ids append (see `maxRunNameLength`), so a long name
 * is refused before anything starts instead of failing mid-run.
 * @param what - how the user gave it, e.g. `--name` or `name (in config.yaml)`
 * @param name - the name, already {@link RUN_NAME}
 * @param ids - the longest rollout ids the run would create under this name
 * @throws {CliError} naming `what`, the most characters it may have and the longest id's suffix
 */
export function checkRunNameRoom(what: string, name: string, ids: readonly string[]): void {
  const max = maxRunNameLength(name, ids);
  if (name.length <= max) return;
  const longest = ids.reduce((a, b) => (b.length > a.length ? b : a), name);
  throw new CliError(
    `${what} ${shownName(name)}: at most ${max} characters with these settings: its rollout ids add up to ` +
      `${longest.length - name.length} (NAME${longest.slice(name.length)}) and a rollout id has at most ` +
      `${MAX_ROLLOUT_ID_LENGTH}`,
  );
}

/** The abort signal of a command and how to stop listening. */
export interface Interrupt {
  /** Aborted by the first SIGINT or SIGTERM. */
  signal: AbortSignal;
  /** Removes the handlers. */
  dispose(): void;
}

/**
 * Listens for SIGINT and SIGTERM: the first prints `arclight COMMAND: SIGNAL: what` on stderr and aborts the
 * signal (the command then stops what it started and exits 130); a second exits with 130 at once. A closed stdout
 * pipe (EPIPE) aborts the signal too.
 * @param command - the command's name, e.g. `eval`
 * @param what - what stopping does, e.g. `stopping the agents`
 * @returns the signal and a dispose function
 */
export function listenForInterrupt(command: string, what: string): Interrupt {
  const aborter = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (aborter.signal.aborted) process.exit(130); // a second signal: do not wait for the clean-up
    console.error(`arclight ${command}: ${signal}: ${what}`);
    aborter.abort(new Error(`interrupted by ${signal}`));
  };
  // Output piped into a reader that quit (`… | head`): stop the same way instead of crashing on EPIPE and leaving
  // the children (own process groups) running.
  const onStdoutError = (err: NodeJS.ErrnoException) => {
    if (err.code !== "EPIPE") throw err;
    if (!aborter.signal.aborted) aborter.abort(new Error("stdout closed"));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.stdout.on("error", onStdoutError);
  return {
    signal: aborter.signal,
    dispose() {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      process.stdout.off("error", onStdoutError);
    },
  };
}
