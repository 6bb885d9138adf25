/**
 * @module A fake `vllm` executable for tests: `vllm serve MODEL [flags]` parses the flags arclight passes the way
 * vLLM's argparse does (an unknown flag is `vllm: error: unrecognized arguments: …`, exit 2), then serves the fake vLLM
 * on `--host`/`--port` with the routes those flags and the environment mount (`fake-vllm-admin.ts`). Like vLLM it
 * forks an engine-core process into its process group, so tests can check that a stop takes the whole group.
 *
 * Test hooks (environment): `FAKE_VLLM_RECORD` — a file each start, call and admin call is appended to as one JSON
 * line; `FAKE_VLLM_STARTUP_MS` — how long "loading the model" takes before it listens; `FAKE_VLLM_FAIL_START` — a
 * message printed to stderr before exiting 1 instead of serving (a model that does not load).
 */
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { FakeVllm } from "./fake-vllm.js";

/** Flags taking one value. */
const VALUED = new Set([
  "--host",
  "--port",
  "--max-logprobs",
  "--max-lora-rank",
  "--max-loras",
  "--tool-call-parser",
  "--gpu-memory-utilization",
  "--max-model-len",
  "--dtype",
  "--tensor-parallel-size",
  "--reasoning-parser",
]);
/** Flags taking no value. */
const SWITCHES = new Set(["--enable-lora", "--enable-sleep-mode", "--enable-auto-tool-choice", "--enforce-eager"]);

/** The parsed `serve` command line. */
interface ServeArgs {
  model: string;
  values: Map<string, string>;
  switches: Set<string>;
  loraModules: { name: string; path: string }[];
  servedModelNames: string[];
}

function usageError(message: string): never {
  process.stderr.write(`usage: vllm serve [model_tag] [options]\nvllm: error: ${message}\n`);
  process.exit(2);
}

/** Parses `serve MODEL …` as vLLM's argparse would (only the flags above; `--lora-modules` takes one or more). */
function parseServe(argv: readonly string[]): ServeArgs {
  const [command, model, ...rest] = argv;
  if (command !== "serve") usageError(`argument subparser: invalid choice: '${command ?? ""}' (choose from 'serve')`);
  if (model === undefined || model.startsWith("--")) usageError("the following arguments are required: model_tag");
  const parsed: ServeArgs = { model, values: new Map(), switches: new Set(), loraModules: [], servedModelNames: [] };
  const unknown: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (SWITCHES.has(arg)) parsed.switches.add(arg);
    else if (VALUED.has(arg)) {
      const value = rest[++i];
      if (value === undefined) usageError(`argument ${arg}: expected one argument`);
      parsed.values.set(arg, value);
    } else if (arg === "--served-model-name") {
      while (rest[i + 1] !== undefined && !rest[i + 1]!.startsWith("--")) parsed.servedModelNames.push(rest[++i]!);
    } else if (arg === "--lora-modules") {
      while (rest[i + 1] !== undefined && !rest[i + 1]!.startsWith("--")) {
        const [name = "", path = ""] = rest[++i]!.split("=", 2);
        parsed.loraModules.push({ name, path });
      }
    } else unknown.push(arg);
  }
  if (unknown.length > 0) usageError(`unrecognized arguments: ${unknown.join(" ")}`);
  return parsed;
}

/** Appends one JSON line to the record file, when the test asked for one. */
function record(entry: Record<string, unknown>): void {
  const file = process.env.FAKE_VLLM_RECORD;
  if (file !== undefined && file !== "") appendFileSync(file, `${JSON.stringify({ pid: process.pid, ...entry })}\n`);
}

/** Forks a stand-in for vLLM's engine core into this process group; it ends when this process ends. */
function startEngineCore(): number | undefined {
  const watch = `const p=${process.pid};setInterval(()=>{try{process.kill(p,0)}catch{process.exit(0)}},200)`;
  const core = spawn(process.execPath, ["-e", watch], { stdio: "ignore" });
  core.unref();
  return core.pid;
}

async function main(): Promise<void> {
  const args = parseServe(process.argv.slice(2));
  const startupMs = Number(process.env.FAKE_VLLM_STARTUP_MS ?? "0");
  if (startupMs > 0) await new Promise((resolve) => setTimeout(resolve, startupMs));
  if (process.env.FAKE_VLLM_FAIL_START) {
    process.stderr.write(`ERROR [core.py] ${process.env.FAKE_VLLM_FAIL_START}\n`);
    process.exit(1);
  }
  const loraOn = args.switches.has("--enable-lora");
  const fake = await FakeVllm.start(
    {},
    {
      servedModel: args.servedModelNames[0] ?? args.model,
      vocabSize: 512,
      port: Number(args.values.get("--port") ?? "8000"),
      host: args.values.get("--host") ?? "0.0.0.0",
      serverFlags: {
        runtimeLora: loraOn && process.env.VLLM_ALLOW_RUNTIME_LORA_UPDATING?.toLowerCase() === "true",
        maxLoraRank: Number(args.values.get("--max-lora-rank") ?? "16"),
        devMode: process.env.VLLM_SERVER_DEV_MODE === "1",
        sleepMode: args.switches.has("--enable-sleep-mode"),
        model: args.model,
        loraModules: loraOn ? args.loraModules : [],
        aliases: args.servedModelNames.slice(1),
      },
      onRecord: record,
    },
  );
  const engineCorePid = startEngineCore();
  record({
    kind: "start",
    argv: process.argv.slice(2),
    engineCorePid,
    cudaVisibleDevices: process.env.CUDA_VISIBLE_DEVICES ?? null,
    devMode: process.env.VLLM_SERVER_DEV_MODE ?? null,
    runtimeLora: process.env.VLLM_ALLOW_RUNTIME_LORA_UPDATING ?? null,
  });
  process.stdout.write(`INFO:     Uvicorn running on ${fake.url.replace(/\/v1$/, "")} (Press CTRL+C to quit)\n`);
  const shutdown = () => void fake.close().then(() => process.exit(0));
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}

void main();
