/**
 * @module Resolves the controller configuration for `arclight controller`: YAML file < env (`ARCLIGHT_KEY`, `AGL_KEY`)
 * < flags, validated by the strict schema in `controller/config.ts`. Every failure names the flag, env var or file key.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { type ControllerConfig, ControllerConfigSchema } from "../controller/config.js";
import { CliError } from "./program.js";

/** Controller flags as commander hands them over (strings; absent when not given). */
export interface ControllerFlags {
  config?: string;
  gatewayUrl?: string;
  key?: string;
  mode?: string;
  poolSize?: string;
  pollInterval?: string;
  spawnRate?: string;
  logTailBytes?: string;
  killGraceSeconds?: string;
  stateFile?: string;
  cwd?: string;
  logLevel?: string;
}

/** Each flag → config key and how to convert its text. */
const FLAG_KEYS: readonly [keyof ControllerFlags, keyof ControllerConfig, "string" | "int" | "number"][] = [
  ["gatewayUrl", "gateway_url", "string"],
  ["key", "key", "string"],
  ["mode", "mode", "string"],
  ["poolSize", "pool_size", "int"],
  ["pollInterval", "poll_interval_seconds", "number"],
  ["spawnRate", "spawn_rate_per_second", "number"],
  ["logTailBytes", "log_tail_bytes", "int"],
  ["killGraceSeconds", "kill_grace_seconds", "number"],
  ["stateFile", "state_file", "string"],
  ["cwd", "cwd", "string"],
  ["logLevel", "log_level", "string"],
];

/** `--pool-size` from `poolSize`. */
function flagName(flag: string): string {
  return `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

function convertFlag(flag: string, text: string, kind: "string" | "int" | "number"): unknown {
  if (kind === "string") return text;
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || (kind === "int" && !Number.isInteger(value))) {
    throw new CliError(`${flagName(flag)} ${text}: expected ${kind === "int" ? "an integer" : "a number"}`);
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
  for (const [flag, key, kind] of FLAG_KEYS) {
    const text = flags[flag];
    if (text === undefined) continue;
    merged[key] = convertFlag(flag, text, kind);
    source.set(key, flagName(flag));
  }
  const result = ControllerConfigSchema.safeParse(merged);
  if (result.success) return Object.freeze(result.data);
  const issue = result.error.issues[0]!;
  const key = String(issue.path[0] ?? "");
  if (issue.code === "unrecognized_keys") {
    const keys = (issue as { keys: string[] }).keys.join(", ");
    const accepted = ControllerConfigSchema.keyof().options.join(", ");
    const where =
      issue.path.length === 0 ? `--config ${flags.config}` : `--config ${flags.config}: key ${issue.path.join(".")}`;
    throw new CliError(`${where}: unknown key(s) ${keys}${issue.path.length === 0 ? `; accepted: ${accepted}` : ""}`);
  }
  const where = source.get(key) ?? `key ${key}`;
  const path = issue.path.length > 1 ? ` (${issue.path.join(".")})` : "";
  throw new CliError(`${where}${path}: ${issue.message}`);
}
