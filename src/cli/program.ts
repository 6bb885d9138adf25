/** @module The `arclight` commander program: every subcommand is registered here, one file each under src/cli/. */
import { readFileSync } from "node:fs";
import { Command } from "commander";
import { registerApo } from "./apo.js";
import { registerController } from "./controller.js";
import { registerDemo } from "./demo.js";
import { registerEngine } from "./engine.js";
import { registerEval } from "./eval.js";
import { registerExport } from "./export.js";
import { registerGateway } from "./gateway.js";
import { registerInspect } from "./inspect.js";
import { registerSft } from "./sft.js";
import { registerTrain } from "./train.js";

/** Reads this package's version from package.json (works from src/ under tsx and from dist/). */
function packageVersion(): string {
  const url = new URL("../../package.json", import.meta.url);
  return (JSON.parse(readFileSync(url, "utf8")) as { version: string }).version;
}

/**
 * Rewrites commander's usage error (`error: unknown option '--bogus'\n`) into the CLI's one-line shape:
 * `arclight: unknown option '--bogus' (add --help for usage)`.
 */
export function usageErrorLine(text: string): string {
  return `arclight: ${text.trim().replace(/^error: /, "")} (add --help for usage)\n`;
}

/** Builds the commander program with every subcommand registered. */
export function buildProgram(): Command {
  const program = new Command()
    .name("arclight")
    .description("Train any AI agent with reinforcement learning from its real runs, without changing the agent.")
    .version(packageVersion(), "-V, --version")
    .configureOutput({ outputError: (text, write) => write(usageErrorLine(text)) })
    .exitOverride();
  // Subcommands register here, one file each under src/cli/.
  registerEngine(program);
  registerGateway(program);
  registerController(program);
  registerInspect(program);
  registerTrain(program);
  registerDemo(program);
  registerEval(program);
  registerSft(program);
  registerExport(program);
  registerApo(program);
  return program;
}
