/**
 * @module Resolves the gateway configuration for `arclight gateway`: YAML file < env (`ARCLIGHT_KEY`, `AGL_KEY`,
 * `ARCLIGHT_STORE`, `ARCLIGHT_UPSTREAM_KEY`) <
 * flags, validated by the strict schema in `gateway/config.ts`. Every failure names the flag, env var or file key.
 */
import { statSync } from "node:fs";
import { type GatewayConfig, GatewayConfigSchema } from "../gateway/config.js";
import { CliError } from "./cli-error.js";
import { type GivenFlag, resolveLayeredConfig } from "./layered-config.js";

/** Gateway flags as commander hands them over (strings; absent when not given). */
export interface GatewayFlags {
  config?: string;
  host?: string;
  port?: string;
  key?: string;
  keyFile?: string;
  store?: string;
  modelName?: string;
  trainTemperature?: string;
  valTemperature?: string;
  includeLogProbs?: string;
  bodyLimitBytes?: string;
  upstreamTimeoutSeconds?: string;
  headersTimeoutSeconds?: string;
  requestTimeoutSeconds?: string;
  shutdownGraceSeconds?: string;
  logLevel?: string;
  dashboard?: string;
  dashboardKey?: string;
  runsDir?: string;
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
  ["headersTimeoutSeconds", "headers_timeout_seconds", "number"],
  ["requestTimeoutSeconds", "request_timeout_seconds", "number"],
  ["shutdownGraceSeconds", "shutdown_grace_seconds", "number"],
  ["logLevel", "log_level", "string"],
  ["dashboard", "dashboard", "bool"],
  ["dashboardKey", "dashboard_key", "string"],
  ["runsDir", "runs_dir", "string"],
];

/** `--model-name` from `modelName`. */
function flagName(flag: string): string {
  return `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/**
 * Resolves the gateway configuration.
 * @param flags - commander's options for `arclight gateway`
 * @param env - the process environment (only `ARCLIGHT_KEY`, `AGL_KEY`, `ARCLIGHT_STORE` and `ARCLIGHT_UPSTREAM_KEY`
 *   are read)
 * @returns the frozen configuration
 * @throws {CliError} naming the bad flag, env var or config key and what it accepts
 */
export function loadGatewayConfig(flags: GatewayFlags, env: NodeJS.ProcessEnv): Readonly<GatewayConfig> {
  const given: GivenFlag[] = [];
  for (const [flag, key, kind] of FLAG_KEYS) {
    const text = flags[flag];
    if (text !== undefined) given.push({ key, flag: flagName(flag), text, kind });
  }
  const config = resolveLayeredConfig({
    schema: GatewayConfigSchema,
    what: "gateway",
    configPath: flags.config,
    env,
    flags: given,
    envKeys: { ARCLIGHT_STORE: "store", ARCLIGHT_UPSTREAM_KEY: "upstream_key" },
    keyFile: flags.keyFile,
  });
  if (config.runs_dir !== "" && !statSync(config.runs_dir, { throwIfNoEntry: false })?.isDirectory()) {
    throw new CliError(`--runs-dir ${config.runs_dir}: not a folder (a folder of runs, e.g. runs)`);
  }
  return config;
}
