/**
 * @module Resolves the gateway configuration for `arclight gateway`: YAML file < env (`ARCLIGHT_KEY`, `AGL_KEY`) <
 * flags, validated by the strict schema in `gateway/config.ts`. Every failure names the flag, env var or file key.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { type GatewayConfig, GatewayConfigSchema } from "../gateway/config.js";
import { CliError } from "./program.js";

/** Gateway flags as commander hands them over (strings; absent when not given). */
export interface GatewayFlags {
  config?: string;
  host?: string;
  port?: string;
  key?: string;
  store?: string;
  modelName?: string;
  trainTemperature?: string;
  valTemperature?: string;
  includeLogProbs?: string;
  bodyLimitBytes?: string;
  upstreamTimeoutSeconds?: string;
  logLevel?: string;
}

/** How each flag maps to a config key and converts its text. */
const FLAG_KEYS: readonly [keyof GatewayFlags, keyof GatewayConfig, "string" | "int" | "number" | "bool"][] = [
  ["host", "host", "string"],
  ["port", "port", "int"],
  ["key", "key", "string"],
  ["store", "store", "string"],
  ["modelName", "model_name", "string"],
  ["trainTemperature", "train_temperature", "number"],
  ["valTemperature", "val_temperature", "number"],
  ["includeLogProbs", "include_log_probs", "bool"],
  ["bodyLimitBytes", "body_limit_bytes", "int"],
  ["upstreamTimeoutSeconds", "upstream_timeout_seconds", "number"],
  ["logLevel", "log_level", "string"],
];

/** `--model-name` from `modelName`. */
function flagName(flag: string): string {
  return `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** Converts one flag's text, or throws naming the flag. */
function convertFlag(flag: string, text: string, kind: "string" | "int" | "number" | "bool"): unknown {
  if (kind === "string") return text;
  if (kind === "bool") {
    if (text === "true" || text === "false") return text === "true";
    throw new CliError(`${flagName(flag)} ${text}: expected true or false`);
  }
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || (kind === "int" && !Number.isInteger(value))) {
    throw new CliError(`${flagName(flag)} ${text}: expected ${kind === "int" ? "an integer" : "a number"}`);
  }
  return value;
}

/** Reads and parses the YAML config file into a plain mapping, or throws naming the file. */
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
    throw new CliError(`--config ${path}: expected a mapping of gateway keys`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * Resolves the gateway configuration.
 * @param flags - commander's options for `arclight gateway`
 * @param env - the process environment (only `ARCLIGHT_KEY` and `AGL_KEY` are read)
 * @returns the frozen configuration
 * @throws {CliError} naming the bad flag, env var or config key and what it accepts
 */
export function loadGatewayConfig(flags: GatewayFlags, env: NodeJS.ProcessEnv): Readonly<GatewayConfig> {
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
  const result = GatewayConfigSchema.safeParse(merged);
  if (result.success) return Object.freeze(result.data);
  const issue = result.error.issues[0]!;
  const key = String(issue.path[0] ?? "");
  if (issue.code === "unrecognized_keys") {
    const keys = (issue as { keys: string[] }).keys.join(", ");
    throw new CliError(
      `--config ${flags.config}: unknown key(s) ${keys}; accepted: ${GatewayConfigSchema.keyof().options.join(", ")}`,
    );
  }
  const where = source.get(key) ?? `key ${key}`;
  throw new CliError(`${where}: ${issue.message}`);
}
