/**
 * @module Resolves the controller configuration for `arclight controller`: YAML file < env (`ARCLIGHT_KEY`, `AGL_KEY`)
 * < flags, validated by the strict schema in `controller/config.ts`. Every failure names the flag, env var or file key.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { type ControllerConfig, ControllerConfigSchema } from "../controller/config.js";
import { CliError } from "./program.js";

/** How a flag's text becomes a config value: as is, a number, an integer, or YAML/JSON (for a mapping). */
type FlagKind = "string" | "int" | "number" | "yaml";

/** One `arclight controller` flag: the `--kebab-case` of its config key, maybe with a shorter alias. */
export interface ControllerFlag {
  /** The config key it sets. */
  key: keyof ControllerConfig;
  /** `--` + the key in kebab-case, e.g. `--poll-interval-seconds`. */
  flag: string;
  /** commander's placeholder, e.g. `<s>`. */
  placeholder: string;
  kind: FlagKind;
  /** A shorter spelling kept for the issue's command line, e.g. `--poll-interval`; the long flag wins over it. */
  alias?: string;
}

/** Placeholder and conversion of every controller key; a key missing here fails the type check. */
const KEY_KINDS: Record<keyof ControllerConfig, [placeholder: string, kind: FlagKind, alias?: string]> = {
  gateway_url: ["<url>", "string"],
  key: ["<key>", "string"],
  mode: ["<mode>", "string"],
  pool_size: ["<n>", "int"],
  poll_interval_seconds: ["<s>", "number", "--poll-interval"],
  spawn_rate_per_second: ["<n>", "number", "--spawn-rate"],
  spawn_burst: ["<n>", "int"],
  log_tail_bytes: ["<n>", "int"],
  kill_grace_seconds: ["<s>", "number"],
  state_file: ["<path>", "string"],
  cwd: ["<dir>", "string"],
  local: ["<yaml>", "yaml"],
  list_page_size: ["<n>", "int"],
  log_level: ["<level>", "string"],
};

/** Every controller flag, one per config key, in the schema's key order. */
export const CONTROLLER_FLAGS: readonly ControllerFlag[] = ControllerConfigSchema.keyof().options.map((key) => {
  const [placeholder, kind, alias] = KEY_KINDS[key];
  return { key, flag: `--${key.replaceAll("_", "-")}`, placeholder, kind, ...(alias ? { alias } : {}) };
});

/** commander's attribute name of a flag: `--poll-interval-seconds` → `pollIntervalSeconds`. */
export function flagAttribute(flag: string): string {
  return flag.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Controller flags as commander hands them over, by attribute name (`poolSize`, `pollInterval`, …): strings, absent
 * when not given; `config` is the YAML file.
 */
export type ControllerFlags = Partial<Record<string, string>> & { config?: string };

function convertFlag(flag: string, text: string, kind: FlagKind): unknown {
  if (kind === "string") return text;
  if (kind === "yaml") {
    try {
      return parseYaml(text);
    } catch (err) {
      throw new CliError(`${flag}: invalid YAML/JSON (${(err as Error).message.split("\n", 1)[0]})`);
    }
  }
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || (kind === "int" && !Number.isInteger(value))) {
    throw new CliError(`${flag} ${text}: expected ${kind === "int" ? "an integer" : "a number"}`);
  }
  return value;
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new CliError(`--config ${path}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (err) {
    throw new CliError(`--config ${path}: invalid YAML (${(err as Error).message.split("\n", 1)[0]})`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new CliError(`--config ${path}: expected a mapping of controller keys`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * Resolves the controller configuration.
 * @param flags - commander's options for `arclight controller`
 * @param env - the process environment (only `ARCLIGHT_KEY` and `AGL_KEY` are read)
 * @returns the frozen configuration
 * @throws {CliError} naming the bad flag, env var or config key and what it accepts
 */
export function loadControllerConfig(flags: ControllerFlags, env: NodeJS.ProcessEnv): Readonly<ControllerConfig> {
  const merged: Record<string, unknown> = flags.config ? readConfigFile(flags.config) : {};
  const source = new Map<string, string>(Object.keys(merged).map((k) => [k, `--config ${flags.config}: key ${k}`]));
  const envKey = env.ARCLIGHT_KEY !== undefined ? "ARCLIGHT_KEY" : env.AGL_KEY !== undefined ? "AGL_KEY" : undefined;
  if (envKey) {
    merged.key = env[envKey];
    source.set("key", `env ${envKey}`);
  }
  for (const { key, flag, kind, alias } of CONTROLLER_FLAGS) {
    // The long flag wins over its alias when both are given.
    const given = [flag, alias].find((name) => name !== undefined && flags[flagAttribute(name)] !== undefined);
    if (given === undefined) continue;
    merged[key] = convertFlag(given, flags[flagAttribute(given)]!, kind);
    source.set(key, given);
  }
  const result = ControllerConfigSchema.safeParse(merged);
  if (result.success) return Object.freeze(result.data);
  const issue = result.error.issues[0]!;
  const key = String(issue.path[0] ?? "");
  if (issue.code === "unrecognized_keys") {
    const keys = (issue as { keys: string[] }).keys.join(", ");
    const accepted = ControllerConfigSchema.keyof().options.join(", ");
    // Unknown top-level keys can only come from the file; a nested one comes from whoever set the outer key.
    const where =
      issue.path.length === 0
        ? `--config ${flags.config}`
        : `${source.get(key) ?? `key ${key}`}${issue.path.length > 1 ? ` (${issue.path.join(".")})` : ""}`;
    throw new CliError(`${where}: unknown key(s) ${keys}${issue.path.length === 0 ? `; accepted: ${accepted}` : ""}`);
  }
  const where = source.get(key) ?? `key ${key}`;
  const path = issue.path.length > 1 ? ` (${issue.path.join(".")})` : "";
  throw new CliError(`${where}${path}: ${issue.message}`);
}
