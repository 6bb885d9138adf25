/** @module Process entry of the `arclight` CLI: parse argv, print user errors as one line, set the exit code. */
import { CommanderError } from "commander";
import { TorchWorkerStartFailed } from "../engine/remote/worker-process.js";
import { GatewayUnreachable } from "../gateway/client-errors.js";
import { ArclightError } from "../protocol/index.js";
import { ComponentStartFailed } from "../run/gateway-child.js";
import { CliError } from "./cli-error.js";
import { buildProgram } from "./program.js";

/**
 * Runs the CLI on `argv` (process.argv shape). A user error (bad flag, unknown command, bad config) prints one line
 * `arclight: <message>` and exits 2; `--help` and `--version` exit 0.
 */
export async function main(argv: string[]): Promise<void> {
  const program = await buildProgram(argv);
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander exits 0 for --help/--version and 1 for every usage error; usage errors are exit 2 here.
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    const oneLine = [CliError, ArclightError, ComponentStartFailed, TorchWorkerStartFailed];
    if (oneLine.some((kind) => err instanceof kind)) {
      console.error(`arclight: ${(err as Error).message}`);
      process.exitCode = 2;
      return;
    }
    if (err instanceof GatewayUnreachable) {
      console.error(`arclight: cannot reach the gateway (${err.message}): is it running, and is --gateway-url right?`);
      process.exitCode = 2;
      return;
    }
    throw err;
  }
}

await main(process.argv);
