/**
 * @module Flags that `arclight train` passes on to the gateway child it starts (`arclight gateway …`), checked first.
 */
import { CliError } from "./cli-error.js";

/**
 * The gateway child's `--val-temperature` / `--train-temperature` argument for the same flag of `arclight train`: the
 * sampling temperature the proxy forces on validation rollouts (the gateway's default 0.7 without it; 0 is greedy, as
 * `arclight eval` validates) or on training rollouts (default 1; another value makes the sampler's distribution differ
 * from the policy the trainer scores, docs/torch-engine.md "Sampler–trainer mismatch").
 * @param mode - which flag: `val` or `train`
 * @param value - the flag's text, or undefined when not given
 * @param runningGateway - true with `--gateway-url` (no child is started)
 * @returns the child's extra argv, empty without the flag
 * @throws {CliError} naming the flag for a value that is not a number >= 0, or with a running gateway
 */
export function temperatureArgs(mode: "val" | "train", value: string | undefined, runningGateway: boolean): string[] {
  if (value === undefined) return [];
  const flag = `--${mode}-temperature`;
  if (runningGateway) {
    throw new CliError(`${flag} with --gateway-url: set ${mode}_temperature in that gateway's own config`);
  }
  const temperature = Number(value);
  if (value.trim() === "" || !Number.isFinite(temperature) || temperature < 0) {
    throw new CliError(`${flag} ${value}: expected a number >= 0`);
  }
  return [flag, String(temperature)];
}
