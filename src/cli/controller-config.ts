/**
 * @module Resolves the controller configuration for `arclight controller`: YAML file < env (`ARCLIGHT_KEY`, `AGL_KEY`)
 * < flags, validated by the strict schema in `controller/config.ts`. Every failure names the flag, env var or file key.
 */
import { type ControllerConfig, ControllerConfigSchema } from "../controller/config.js";
import { type FlagKind, type GivenFlag, resolveLayeredConfig } from "./layered-config.js";

/** One `arclight controller` flag: the `--kebab-case` of its config key, maybe with a shorter alias. */
export interface ControllerFlag {
  /** The config key it sets. */
  key: keyof ControllerConfig;
  /** `--` + the key in kebab-case, e.g. `--poll-interval-seconds`. */
  flag: string;
  /** commander's placeholder, e.g. `<s>`. */
  placeholder: string;
  kind: FlagKind;
  /** A shorter spelling kept for the command line, e.g. `--poll-interval`; the long flag wins over it. */
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
  lease_seconds: ["<s>", "number"],
  reuse_processes: ["<bool>", "bool"],
  python: ["<path>", "string"],
  state_file: ["<path>", "string"],
  cwd: ["<dir>", "string"],
  local: ["<yaml>", "yaml"],
  resources_env: ["<yaml>", "yaml"],
  resources_file_env: ["<yaml>", "yaml"],
  resources_dir: ["<dir>", "string"],
  allowed_commands: ["<yaml>", "yaml"],
  allowed_agent_classes: ["<yaml>", "yaml"],
  allow_any_command: ["<bool>", "bool"],
  list_page_size: ["<n>", "int"],
  standard_env: ["<bool>", "bool"],
  namespace: ["<ns>", "string"],
  agent_url: ["<url>", "string"],
  kubeconfig: ["<path>", "string"],
  max_jobs_per_minute: ["<n>", "number"],
  job_burst: ["<n>", "int"],
  ttl_after_finished_seconds: ["<s>", "int", "--ttl-after-finished"],
  job_template_file: ["<path>", "string"],
  key_secret_name: ["<name>", "string"],
  orphan_grace_seconds: ["<s>", "number"],
  pod_log_lines: ["<n>", "int"],
  k8s_env_map: ["<yaml>", "yaml"],
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
export type ControllerFlags = Partial<Record<string, string>> & { config?: string; keyFile?: string };

/**
 * Resolves the controller configuration.
 * @param flags - commander's options for `arclight controller`
 * @param env - the process environment (only `ARCLIGHT_KEY` and `AGL_KEY` are read)
 * @returns the frozen configuration
 * @throws {CliError} naming the bad flag, env var or config key and what it accepts
 */
export function loadControllerConfig(flags: ControllerFlags, env: NodeJS.ProcessEnv): Readonly<ControllerConfig> {
  const given: GivenFlag[] = [];
  for (const { key, flag, kind, alias } of CONTROLLER_FLAGS) {
    // The long flag wins over its alias when both are given.
    const name = [flag, alias].find((n) => n !== undefined && flags[flagAttribute(n)] !== undefined);
    if (name !== undefined) given.push({ key, flag: name, text: flags[flagAttribute(name)]!, kind });
  }
  return resolveLayeredConfig({
    schema: ControllerConfigSchema,
    what: "controller",
    configPath: flags.config,
    env,
    flags: given,
    keyFile: flags.keyFile,
  });
}
