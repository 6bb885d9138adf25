/** @module The judge a command runs with: the config's `judge` section, its API key read from the env var it names. */
import type { GroupJudge } from "../judge/apply.js";
import type { JudgeConfig } from "../judge/config.js";
import { Judge } from "../judge/judge.js";
import { CliError } from "./cli-error.js";

/**
 * The judge of a config, or undefined when `judge.enabled` is false.
 * @param config - the config's `judge` section
 * @param env - the process environment (only the variable `judge.api_key_env` names is read)
 * @returns the judge and its section
 * @throws {CliError} naming judge.api_key_env when it names a variable that is not set
 */
export function judgeOf(
  config: JudgeConfig,
  env: Readonly<Record<string, string | undefined>>,
): GroupJudge | undefined {
  if (!config.enabled) return undefined;
  let apiKey = "";
  if (config.api_key_env !== "") {
    apiKey = env[config.api_key_env] ?? "";
    if (apiKey === "")
      throw new CliError(`judge.api_key_env ${config.api_key_env}: that environment variable is not set`);
  }
  const { enabled: _enabled, api_key_env: _env, ...settings } = config;
  return { config, judge: new Judge({ ...settings, apiKey }) };
}
