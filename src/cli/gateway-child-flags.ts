/**
 * @module Flags that `arclight train` passes on to the gateway child it starts (`arclight gateway …`), checked first.
 */
import { CliError } from "./cli-error.js";

/**
 * The gateway child's `--val-temperature` argument for `arclight train --val-temperature T`: the sampling temperature
 * of validation rollouts (the gateway's own default, 0.7, without it; 0 is greedy, as `arclight eval` validates).
 * @param value - the flag's text, or undefined when not given
 * @param runningGateway - true with `--gateway-url` (no child is started)
 * @returns the child's extra argv, empty without the flag
 * @throws {CliError} naming the flag for a value that is not a number >= 0, or with a running gateway
 */
export function valTemperatureArgs(value: string | undefined, runningGateway: boolean): string[] {
  if (value === undefined) return [];
  if (runningGateway) {
    throw new CliError("--val-temperature with --gateway-url: set val_temperature in that gateway's own config");
  }
  const temperature = Number(value);
  if (value.trim() === "" || !Number.isFinite(temperature) || temperature < 0) {
    throw new CliError(`--val-temperature ${value}: expected a number >= 0`);
  }
  return ["--val-temperature", String(temperature)];
}
