/**
 * @module Which agent programs a controller agrees to run: a rollout's own `config.local` comes from whoever created
 * it, so it runs only if the controller's settings allow it; `env_map` may not set loader variables (`LD_PRELOAD`, …).
 */
import type { LocalConfig } from "../protocol/index.js";
import { LaunchError } from "./local.js";

/** The controller settings the policy reads. */
export interface LaunchPolicy {
  /** The controller's own agent; always allowed. */
  local?: LocalConfig;
  /** Argv lists a rollout's `config.local.command` may be, compared exactly. */
  allowed_commands: readonly (readonly string[])[];
  /** `module.js:Export` strings a rollout's `config.local.agent_class` may be. */
  allowed_agent_classes: readonly string[];
  /** Run whatever a rollout names (a machine where everyone who may create rollouts may run code anyway). */
  allow_any_command: boolean;
}

/** Env var names (or prefixes ending in `*`) a rollout's `env_map` may not set: each makes a program load other code. */
export const CODE_LOADING_ENV: readonly string[] = [
  "LD_*",
  "DYLD_*",
  "NODE_OPTIONS",
  "NODE_PATH",
  "PYTHONPATH",
  "PYTHONSTARTUP",
  "PYTHONHOME",
  "PYTHONINSPECT",
  "PATH",
  "BASH_ENV",
  "ENV",
  "PERL5OPT",
  "PERL5LIB",
  "RUBYOPT",
  "JAVA_TOOL_OPTIONS",
];

function loadsCode(name: string): boolean {
  return CODE_LOADING_ENV.some((entry) => (entry.endsWith("*") ? name.startsWith(entry.slice(0, -1)) : name === entry));
}

function sameArgv(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((arg, i) => arg === b[i]);
}

/** @returns why the rollout's program is refused, or undefined when the policy allows it */
function programRefusal(local: LocalConfig, policy: LaunchPolicy): string | undefined {
  if (local.command !== undefined) {
    const allowed = [...policy.allowed_commands, ...(policy.local?.command ? [policy.local.command] : [])];
    if (allowed.some((argv) => sameArgv(argv, local.command!))) return;
    return `config.local.command ${JSON.stringify(local.command)} is not one this controller runs: add it to the controller's allowed_commands (or make it the controller's own local.command)`;
  }
  if (local.agent_class !== undefined) {
    const allowed = [...policy.allowed_agent_classes, ...(policy.local?.agent_class ? [policy.local.agent_class] : [])];
    if (allowed.includes(local.agent_class)) return;
    return `config.local.agent_class ${JSON.stringify(local.agent_class)} is not one this controller runs: add it to the controller's allowed_agent_classes`;
  }
  return;
}

/** @throws {LaunchError} naming what is refused and the setting that would allow it */
export function checkLaunchAllowed(local: LocalConfig | null | undefined, policy: LaunchPolicy): void {
  if (local === null || local === undefined || policy.allow_any_command) return;
  const refusal = programRefusal(local, policy);
  if (refusal !== undefined) throw new LaunchError(refusal);
  const ownEnvMap = policy.local?.env_map ?? {};
  for (const name of Object.keys(local.env_map ?? {})) {
    if (loadsCode(name) && ownEnvMap[name] !== local.env_map[name]) {
      throw new LaunchError(`config.local.env_map ${name}: a rollout may not set a variable that loads code`);
    }
  }
}
