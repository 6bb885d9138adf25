/**
 * @module The `arclight` commander program: every subcommand is registered here, one file each under src/cli/. Only
 * the invoked command's module is imported (each pulls in the engine, gateway or trainer: about 1 s of CPU apiece);
 * the others appear in `arclight --help` from {@link COMMANDS}, whose lines `program.test.ts` checks against the
 * modules.
 */
import { readFileSync } from "node:fs";
import { Command, Help } from "commander";

/** A subcommand: how `arclight --help` lists it, and where its module is. */
interface CommandEntry {
  name: string;
  /** The command's line in `arclight --help`: `train [options] <config>`. */
  term: string;
  description: string;
  register: () => Promise<(program: Command) => void>;
}

/** Every subcommand, in the order `arclight --help` lists them. */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "engine",
    term: "engine",
    description: "Run an engine (embedded, or torch in a Python worker)",
    register: async () => (await import("./engine.js")).registerEngine,
  },
  {
    name: "gateway",
    term: "gateway [options]",
    description: "Serve the rollout, event and model HTTP API (Agent Lightning v1.0 compatible) and the LLM proxy",
    register: async () => (await import("./gateway.js")).registerGateway,
  },
  {
    name: "controller",
    term: "controller [options]",
    description:
      "Run queued rollouts as agent processes (any language) or, with --mode k8s, as Kubernetes Jobs, reporting " +
      "their outcome to the gateway",
    register: async () => (await import("./controller.js")).registerController,
  },
  {
    name: "inspect",
    term: "inspect [options] <rollout_id>",
    description: "Print, as JSON, the training rows the trainer would make from one rollout's events",
    register: async () => (await import("./inspect.js")).registerInspect,
  },
  {
    name: "train",
    term: "train [options] <config>",
    description: "Train a policy with GRPO from agent rollouts (starts gateway, engine and controller as needed)",
    register: async () => (await import("./train.js")).registerTrain,
  },
  {
    name: "demo",
    term: "demo [options]",
    description:
      "Train the bundled calculator agent with SFT + GRPO on the embedded engine (time and results: " +
      "docs/benchmarks.md)",
    register: async () => (await import("./demo.js")).registerDemo,
  },
  {
    name: "eval",
    term: "eval [options] <config>",
    description: "Evaluate a policy on a config's agent and tasks: pass@k, mean reward, completion share (no training)",
    register: async () => (await import("./eval.js")).registerEval,
  },
  {
    name: "sft",
    term: "sft [options] <config>",
    description: "Supervised fine-tuning on recorded rollouts (selection by run, tag, data ids, reward, best-of-N)",
    register: async () => (await import("./sft.js")).registerSft,
  },
  {
    name: "export",
    term: "export [options]",
    description: "Write recorded rollouts as JSONL: OpenAI chat fine-tuning format or token level",
    register: async () => (await import("./export.js")).registerExport,
  },
  {
    name: "apo",
    term: "apo [options] <config>",
    description: "Prompt optimisation: beam search over a prompt resource with an optimiser LLM's critiques and edits",
    register: async () => (await import("./apo.js")).registerApo,
  },
];

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

/**
 * The subcommand `args` (argv after the script) names: its first word that is not an option; after `help`, the
 * word after it (`arclight help train`).
 */
function invokedCommand(args: readonly string[]): string | undefined {
  const words = args.filter((arg) => !arg.startsWith("-"));
  return words[0] === "help" ? words[1] : words[0];
}

/**
 * Builds the commander program.
 * @param argv - process.argv; the command it names is registered in full, every other one by its help line only.
 *   Absent: every command in full (tests that read the options of several).
 * @returns the program, ready for `parseAsync(argv)`
 */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
  const terms = new Map(COMMANDS.map((entry) => [entry.name, entry.term]));
  const program = new Command()
    .name("arclight")
    .description("Train any AI agent with reinforcement learning from its real runs, without changing the agent.")
    .version(packageVersion(), "-V, --version")
    .configureOutput({ outputError: (text, write) => write(usageErrorLine(text)) })
    .configureHelp({ subcommandTerm: (cmd) => terms.get(cmd.name()) ?? new Help().subcommandTerm(cmd) })
    .exitOverride();
  const invoked = argv === undefined ? undefined : invokedCommand(argv.slice(2));
  for (const entry of COMMANDS) {
    if (argv === undefined || entry.name === invoked) (await entry.register())(program);
    else program.command(entry.name).description(entry.description);
  }
  return program;
}
