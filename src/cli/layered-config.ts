/**
 * @module Layered configuration for long-running commands: YAML file < env (`ARCLIGHT_KEY`, `AGL_KEY`, else the file
 * `ARCLIGHT_KEY_FILE` names, for the key) < flags < `--key-file`, validated by a component's strict zod schema. Every failure is a `CliError` naming the flag, env var or file key.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { CliError } from "./cli-error.js";
import { readKeyFile } from "./key-source.js";

/** How a flag's text becomes a config value: as is, a number, an integer, `true`/`false`, or YAML/JSON (a mapping). */
export type FlagKind = "string" | "int" | "number" | "bool" | "yaml";

/** One flag that was given: the name the user typed (e.g. `--pool-size`), its text, and the key it sets. */
export interface GivenFlag {
  key: string;
  flag: string;
  text: string;
  kind: FlagKind;
}

/**
 * Converts one flag's text to a config value.
 * @throws {CliError} naming the flag and what it accepts
 */
export function convertFlag(flag: string, text: string, kind: FlagKind): unknown {
  if (kind === "string") return text;
  if (kind === "yaml") {
    try {
      return parseYaml(text);
    } catch (err) {
      throw new CliError(`${flag}: invalid YAML/JSON (${(err as Error).message.split("\n", 1)[0]})`);
    }
  }
  if (kind === "bool") {
    if (text === "true" || text === "false") return text === "true";
    throw new CliError(`${flag} ${text}: expected true or false`);
  }
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || (kind === "int" && !Number.isInteger(value))) {
    throw new CliError(`${flag} ${text}: expected ${kind === "int" ? "an integer" : "a number"}`);
  }
  return value;
}

/**
 * Reads a YAML config file into a plain mapping (an empty file is `{}`). Every failure is one line.
 * @param what - what the keys configure, for the message, e.g. "gateway"
 * @param label - how messages name the file: `--config PATH` by default, the bare path for a positional argument
 * @throws {CliError} naming the file: unreadable, invalid YAML (first line of the parser's message, with its line and
 *   column), or not a mapping
 */
export function readConfigFile(path: string, what: string, label = `--config ${path}`): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new CliError(`${label}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (err) {
    throw new CliError(`${label}: invalid YAML (${(err as Error).message.split("\n", 1)[0]?.replace(/:$/, "")})`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new CliError(`${label}: expected a mapping of ${what} keys`);
  }
  return parsed as Record<string, unknown>;
}

/** Inputs of {@link resolveLayeredConfig}. */
export interface LayeredConfigInput<S extends z.ZodObject> {
  /** The component's strict schema. */
  schema: S;
  /** What the keys configure, for messages, e.g. "controller". */
  what: string;
  /** The YAML file given with `--config`, if any. */
  configPath?: string;
  /** The process environment: `ARCLIGHT_KEY` and `AGL_KEY` are read into the `key` key, plus {@link envKeys}. */
  env: NodeJS.ProcessEnv;
  /** Flags the user gave, in order; a later flag for the same key wins. */
  flags: readonly GivenFlag[];
  /** More env vars read as string keys: env var name → config key (e.g. `ARCLIGHT_STORE` → `store`). */
  envKeys?: Readonly<Record<string, string>>;
  /** `--key-file PATH`: the `key` is the file's first line (wins over `--key` and the env). */
  keyFile?: string;
}

/**
 * Merges file < env < flags and validates the result.
 * @returns the frozen configuration, defaults applied
 * @throws {CliError} naming the first bad flag, env var or file key and what it accepts
 */
export function resolveLayeredConfig<S extends z.ZodObject>(input: LayeredConfigInput<S>): Readonly<z.infer<S>> {
  const { schema, configPath, env } = input;
  const merged: Record<string, unknown> = configPath ? readConfigFile(configPath, input.what) : {};
  const source = new Map<string, string>(Object.keys(merged).map((k) => [k, `--config ${configPath}: key ${k}`]));
  const envKey = env.ARCLIGHT_KEY !== undefined ? "ARCLIGHT_KEY" : env.AGL_KEY !== undefined ? "AGL_KEY" : undefined;
  if (envKey && env[envKey] === "" && env.ARCLIGHT_KEY_FILE) {
    // An empty key turns auth off: not what someone who also named a key file meant.
    throw new CliError(`env ${envKey} is empty and ARCLIGHT_KEY_FILE is set: unset ${envKey} to use the file`);
  }
  if (envKey) {
    merged.key = env[envKey];
    source.set("key", `env ${envKey}`);
  } else if (env.ARCLIGHT_KEY_FILE) {
    merged.key = readKeyFile(env.ARCLIGHT_KEY_FILE, "ARCLIGHT_KEY_FILE");
    source.set("key", "env ARCLIGHT_KEY_FILE");
  }
  for (const [name, key] of Object.entries(input.envKeys ?? {})) {
    if (env[name] === undefined) continue;
    merged[key] = env[name];
    source.set(key, `env ${name}`);
  }
  for (const { key, flag, text, kind } of input.flags) {
    merged[key] = convertFlag(flag, text, kind);
    source.set(key, flag);
  }
  if (input.keyFile !== undefined) {
    merged.key = readKeyFile(input.keyFile, "--key-file");
    source.set("key", `--key-file ${input.keyFile}`);
  }
  const result = schema.safeParse(merged);
  if (result.success) return Object.freeze(result.data) as Readonly<z.infer<S>>;
  const issue = result.error.issues[0]!;
  const key = String(issue.path[0] ?? "");
  const nested = issue.path.length > 1 ? ` (${issue.path.join(".")})` : "";
  if (issue.code === "unrecognized_keys") {
    const keys = (issue as { keys: string[] }).keys.join(", ");
    // Unknown top-level keys can only come from the file; a nested one comes from whoever set the outer key.
    if (issue.path.length === 0) {
      throw new CliError(
        `--config ${configPath}: unknown key(s) ${keys}; accepted: ${schema.keyof().options.join(", ")}`,
      );
    }
    throw new CliError(`${source.get(key) ?? `key ${key}`}${nested}: unknown key(s) ${keys}`);
  }
  throw new CliError(`${source.get(key) ?? `key ${key}`}${nested}: ${issue.message}`);
}

/**
 * Collects repeated `--set KEY=VALUE` flags (commander's option parser).
 * @param value - this flag's text
 * @param previous - the texts collected so far
 * @returns every text given, in order
 */
export function collectSetFlag(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * Applies `--set KEY=VALUE` overrides to a config read from YAML, before validation: `KEY` is a dotted path of
 * mapping keys (`total_steps`, `optimizer.learning_rate`, `name`), `VALUE` is parsed as YAML (`5` a number, `true`
 * a boolean, `[a, b]` a list, `null` null, anything else a string). Missing mappings on the path are created. Later
 * flags win over earlier ones; the config file is not changed.
 * @param raw - the config mapping (not changed)
 * @param sets - the flags' texts
 * @returns a copy of `raw` with the overrides applied
 * @throws {CliError} naming `--set` and the text: no `=`, an empty key segment, an empty value (write `null` for
 *   null), invalid YAML, or a path through a value that is not a mapping
 */
export function applySetFlags(raw: Record<string, unknown>, sets: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = structuredClone(raw);
  for (const text of sets) {
    const eq = text.indexOf("=");
    if (eq <= 0) throw new CliError(`--set ${text}: expected KEY=VALUE, e.g. --set total_steps=5`);
    const path = text.slice(0, eq).split(".");
    if (path.some((segment) => segment.trim() === "")) {
      throw new CliError(`--set ${text}: empty key segment in ${JSON.stringify(text.slice(0, eq))}`);
    }
    if (text.slice(eq + 1).trim() === "") {
      throw new CliError(`--set ${text}: empty value (write ${text.slice(0, eq)}=null for null)`);
    }
    const value = convertFlag(`--set ${text}`, text.slice(eq + 1), "yaml");
    let node = out;
    for (const [i, segment] of path.slice(0, -1).entries()) {
      const next = node[segment];
      if (next === undefined || next === null) {
        node[segment] = {};
      } else if (typeof next !== "object" || Array.isArray(next)) {
        throw new CliError(`--set ${text}: ${path.slice(0, i + 1).join(".")} is not a mapping in the config`);
      }
      node = node[segment] as Record<string, unknown>;
    }
    node[path[path.length - 1]!] = value;
  }
  return out;
}

/**
 * How messages name a config read with `--set` overrides: the path, then the flags applied to it.
 * @param path - the config file as the user gave it
 * @param sets - the `--set` texts, in order
 * @returns e.g. `train.yaml with --set total_steps=many`, or the path alone without overrides
 */
export function configLabel(path: string, sets: readonly string[]): string {
  return sets.length === 0 ? path : `${path} with ${sets.map((s) => `--set ${s}`).join(" ")}`;
}
