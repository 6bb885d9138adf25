/**
 * @module A trainer YAML read for a command (`train`, `eval`): `--set` and tracking flags applied, validated, paths
 * resolved.
 */
import { dirname, resolve } from "node:path";
import { ValidationFailed } from "../protocol/index.js";
import { parseTrainerConfig, type TrainerConfig } from "../trainer/config.js";
import { resolveAgentPaths } from "./agent-paths.js";
import { CliError } from "./cli-error.js";
import { applySetFlags, configLabel, readConfigFile } from "./layered-config.js";
import { applyTrackingFlags, type TrackingFlags } from "./tracking-flags.js";

/**
 * Reads a trainer config file, applies `--set` overrides (and tracking flags) and validates; data paths and the agent
 * command's file arguments are resolved against the file's directory (`agent-paths.ts`).
 * @param path - the YAML file
 * @param sets - `--set KEY=VALUE` overrides
 * @param options - `label`: what names the file in an error (e.g. `--config`); `tracking`: tracking flags
 * @throws {CliError} naming the file (after `label`) and the bad key for a config that does not validate
 */
export function loadTrainerConfigFile(
  path: string,
  sets: readonly string[],
  options: { label?: string; tracking?: TrackingFlags } = {},
): Readonly<TrainerConfig> {
  const raw = applyTrackingFlags(applySetFlags(readConfigFile(path, "trainer", path), sets), options.tracking ?? {});
  try {
    const config = parseTrainerConfig(raw);
    const base = dirname(resolve(path));
    const data = {
      train_path: resolve(base, config.data.train_path),
      val_path: config.data.val_path === null ? null : resolve(base, config.data.val_path),
    };
    return Object.freeze({ ...config, data, controller: resolveAgentPaths(config.controller, base) });
  } catch (err) {
    const label = options.label === undefined ? "" : `${options.label} `;
    if (err instanceof ValidationFailed) throw new CliError(`${label}${configLabel(path, sets)}: ${err.message}`);
    throw err;
  }
}
