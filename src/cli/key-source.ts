/**
 * @module Where a command's key comes from: `--key-file PATH` or `ARCLIGHT_KEY_FILE` (the file's first line), the
 * `ARCLIGHT_KEY` / `AGL_KEY` env vars, or `--key` — which every user of the machine can read in the process list, so
 * the CLI warns when it is used.
 */
import { readFileSync } from "node:fs";
import { CliError } from "./cli-error.js";

/** The key flags of a command, as commander hands them over. */
export interface KeyFlags {
  key?: string;
  keyFile?: string;
}

/**
 * Reads a key file: its first line, surrounding whitespace trimmed.
 * @param path - the file
 * @param source - what named it, for the message: `--key-file` or `ARCLIGHT_KEY_FILE`
 * @throws {CliError} naming the source when the file cannot be read or its first line is empty
 */
export function readKeyFile(path: string, source: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new CliError(`${source} ${path}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  const key = (text.split(/\r?\n/, 1)[0] ?? "").trim();
  if (key === "") throw new CliError(`${source} ${path}: the file's first line is empty (expected the key)`);
  return key;
}

/**
 * Prints one warning line when `--key` was given on the command line.
 * @throws {CliError} both `--key` and `--key-file` were given (the file would win, the warning would mislead)
 */
export function warnKeyOnArgv(command: string, flags: KeyFlags): void {
  if (flags.key !== undefined && flags.keyFile !== undefined) {
    throw new CliError("--key and --key-file both given: give one of them (prefer --key-file; --key shows in ps)");
  }
  if (flags.key === undefined || flags.key === "") return;
  console.error(
    `arclight ${command}: warning: --key is visible to every user of this machine (ps); ` +
      "pass the key as ARCLIGHT_KEY or in a file with --key-file instead",
  );
}

/**
 * The key of a command that is not configured by a YAML file: `--key-file`, then `--key` (with a warning), then
 * `ARCLIGHT_KEY`, `AGL_KEY`, `ARCLIGHT_KEY_FILE`.
 * @param command - the command's name, for messages
 * @param flags - its `--key` / `--key-file`
 * @param env - the process environment
 * @returns the key, "" when none is given
 * @throws {CliError} for an unreadable or empty key file, `--key` beside `--key-file`, or an empty env key beside
 *   `ARCLIGHT_KEY_FILE`
 */
export function resolveKey(command: string, flags: KeyFlags, env: NodeJS.ProcessEnv): string {
  warnKeyOnArgv(command, flags);
  if (flags.keyFile !== undefined) return readKeyFile(flags.keyFile, "--key-file");
  if (flags.key !== undefined) return flags.key;
  const fromEnv = env.ARCLIGHT_KEY ?? env.AGL_KEY;
  if (fromEnv === "" && env.ARCLIGHT_KEY_FILE) {
    const name = env.ARCLIGHT_KEY !== undefined ? "ARCLIGHT_KEY" : "AGL_KEY";
    throw new CliError(`env ${name} is empty and ARCLIGHT_KEY_FILE is set: unset ${name} to use the file`);
  }
  if (fromEnv !== undefined) return fromEnv;
  return env.ARCLIGHT_KEY_FILE ? readKeyFile(env.ARCLIGHT_KEY_FILE, "ARCLIGHT_KEY_FILE") : "";
}
