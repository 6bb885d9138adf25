/**
 * @module `arclight engine serve`: serve an embedded engine (fresh `new:<preset>` weights or a checkpoint directory)
 * or a torch engine (`--engine torch`: a Hugging Face model folder or `new:NAME`, in a Python worker) over the
 * vLLM-compatible engine server until SIGINT/SIGTERM.
 */
import { basename, join } from "node:path";
import type { Command } from "commander";
import { pino } from "pino";
import { CheckpointInvalid } from "../engine/checkpoint-error.js";
import { MODEL_PRESETS, type ModelPreset } from "../engine/embedded/config.js";
import { EmbeddedEngine } from "../engine/embedded/engine.js";
import type { Engine } from "../engine/engine.js";
import { openTorchEngine, type TorchEngineConfig, TorchEngineConfigSchema } from "../engine/remote/config.js";
import { RemoteEngine } from "../engine/remote/remote-engine.js";
import { TorchPackageMissing, TorchWorkerStartFailed } from "../engine/remote/worker-process.js";
import { buildEngineServer } from "../engine/server/app.js";
import { type EngineServeConfig, EngineServeConfigSchema } from "../engine/server/config.js";
import { closeWithGrace } from "../http/server-timeouts.js";
import { stopWhenParentGone } from "../process/parent-watch.js";
import { CliError } from "./cli-error.js";
import { decimalInteger, seedFlag } from "./common-flags.js";
import { resolveKey } from "./key-source.js";

/** Parses an integer flag. @throws {CliError} naming the flag */
function intFlag(flag: string): (value: string) => number {
  return (value) => {
    const n = decimalInteger(value);
    if (n === undefined) throw new CliError(`${flag} ${value}: expected an integer`);
    return n;
  };
}

/**
 * Builds the engine a `--model` value names.
 * @throws {CliError} for an unknown preset, a path that is not a checkpoint directory, or a checkpoint whose config or
 * weights are invalid
 */
export async function engineForModel(config: EngineServeConfig): Promise<{ engine: EmbeddedEngine; name: string }> {
  const { model, seed, decode_threads: decodeThreads } = config;
  if (model.startsWith("new:")) {
    const preset = model.slice("new:".length);
    if (!(preset in MODEL_PRESETS))
      throw new CliError(
        `--model ${model}: unknown preset "${preset}" (known: ${Object.keys(MODEL_PRESETS).join(", ")})`,
      );
    return {
      engine: await EmbeddedEngine.create({ config: preset as ModelPreset, seed, decodeThreads }),
      name: preset,
    };
  }
  try {
    return { engine: await EmbeddedEngine.load(model, { decodeThreads }), name: basename(model) };
  } catch (err) {
    if (!(err instanceof CheckpointInvalid)) throw err;
    if (err.kind === "missing")
      throw new CliError(
        `--model ${model}: no checkpoint directory there (expected ${join(model, "config.json")}); or use new:<preset>`,
      );
    throw new CliError(`--model ${model}: ${err.reason}`);
  }
}

/** The default `--model` of the torch engine: the bundled tiny Qwen2 with random weights. */
const TORCH_DEFAULT_MODEL = "new:qwen2-tiny";

/**
 * Starts (or connects to) the torch worker a `--model` names.
 * @throws {CliError} when the Python or its package is missing, the worker exits before listening, or the worker at
 *   `--worker-url` does not answer
 */
async function torchEngineForModel(
  model: string,
  seed: number,
  torch: TorchEngineConfig,
): Promise<{ engine: Engine; name: string }> {
  try {
    const engine = await openTorchEngine(model, seed, torch);
    return { engine, name: engine.info.model };
  } catch (err) {
    if (err instanceof TorchPackageMissing) throw new CliError(err.message);
    if (err instanceof TorchWorkerStartFailed)
      throw new CliError(`--model ${model}: ${err.reason} (its message is above)`);
    // With --worker-url nothing was started: the running worker is what failed, not the --model.
    const flag = torch.url !== null ? `--worker-url ${torch.url}` : `--model ${model}`;
    throw new CliError(`${flag}: ${(err as Error).message}`);
  }
}

/** Serves until a signal; resolves once listening. */
async function serve(
  config: EngineServeConfig,
  kind: "embedded" | "torch",
  torch: TorchEngineConfig,
  key: string,
): Promise<void> {
  const log = pino({ level: config.log_level });
  const { engine, name } =
    kind === "torch" ? await torchEngineForModel(config.model, config.seed, torch) : await engineForModel(config);
  let app: Awaited<ReturnType<typeof buildEngineServer>>;
  try {
    const modelName = config.model_name ?? name;
    app = await buildEngineServer({
      engine,
      modelName,
      log,
      key,
      checkpointRoot: config.checkpoint_root,
      toolCallParser: config.tool_call_parser,
      reasoningParser: config.reasoning_parser,
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    throw new CliError(`--checkpoint-root ${config.checkpoint_root}: no such directory`);
  }
  let url: string;
  try {
    url = await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await app.close();
    if (engine instanceof RemoteEngine) await engine.close();
    else engine.dispose();
    throw new CliError(`--host ${config.host} --port ${config.port}: cannot listen (${(err as Error).message})`);
  }
  log.info({ url, model: config.model, contextLength: engine.contextLength }, "engine server listening");
  if (key === "") {
    console.error(
      "arclight engine serve: WARNING: no admin key (ARCLIGHT_KEY or --key-file): anyone who reaches this port may " +
        "pause it or load weights from the checkpoint root",
    );
  }

  const stop = async (): Promise<void> => {
    await closeWithGrace(() => app.close(), app.server, config.shutdown_grace_seconds * 1000);
    if (engine instanceof RemoteEngine) await engine.close();
    else engine.dispose();
  };
  process.once("SIGINT", () => void stop());
  process.once("SIGTERM", () => void stop());
  // An engine child of `arclight train` whose parent was killed outright, or one under a stopped npx, stops the same way.
  stopWhenParentGone();
}

/** Registers `arclight engine serve`. */
export function registerEngine(program: Command): void {
  const engine = program.command("engine").description("Run an engine (embedded, or torch in a Python worker)");
  engine
    .command("serve")
    .description("Serve an engine over an OpenAI/vLLM-compatible HTTP API")
    .option(
      "--engine <kind>",
      "embedded (tfjs, in this process) or torch (PyTorch worker; see docs/torch-engine.md)",
      "embedded",
    )
    .option(
      "--model <model>",
      "embedded: new:<preset> (tiny, agent, bench, small; default new:agent) or a checkpoint directory; torch: a " +
        `Hugging Face model folder or new:NAME (qwen2-tiny, qwen2-0.5b; default ${TORCH_DEFAULT_MODEL})`,
    )
    .option("--python <path>", "torch: Python interpreter with the arclight-torch package", "python3")
    .option("--device <device>", "torch: cpu, cuda, cuda:1, …", "cpu")
    .option("--dtype <dtype>", "torch: float32, bfloat16 or float16", "float32")
    .option("--lora-rank <r>", "torch: LoRA rank; 0 trains every weight", intFlag("--lora-rank"), 0)
    .option("--lora-alpha <alpha>", "torch: LoRA alpha (default 2 × rank)")
    .option("--lora-targets <names>", "torch: comma-separated module names with adapters", "q_proj,v_proj")
    .option("--worker-url <url>", "torch: a running worker (arclight-torch serve) instead of starting one")
    .option("--activation-checkpointing", "torch: recompute each decoder layer's activations in backward")
    .option(
      "--logprob-chunk <n>",
      "torch: positions per output-layer application for logprobs",
      intFlag("--logprob-chunk"),
    )
    .option(
      "--nproc-per-node <n>",
      "torch: ranks per node under torchrun, FSDP2 (one per GPU)",
      intFlag("--nproc-per-node"),
    )
    .option("--nnodes <n>", "torch: nodes of the torchrun rendezvous", intFlag("--nnodes"))
    .option("--rdzv-endpoint <host:port>", "torch: torchrun rendezvous across nodes")
    .option("--node-rank <n>", "torch: this node's rank (with --rdzv-endpoint)", intFlag("--node-rank"))
    .option("--host <host>", "interface to listen on", "127.0.0.1")
    .option("--port <port>", "TCP port (0 picks a free one)", intFlag("--port"), 8000)
    .option("--seed <seed>", "weight-init seed of new:<preset> models", (value: string) => seedFlag("--seed", value), 0)
    .option(
      "--decode-threads <n>",
      "embedded: threads that decode, 1–64 (this one and decode worker threads; docs/engine.md)",
      intFlag("--decode-threads"),
      1,
    )
    .option("--model-name <name>", "model name served (default: the preset or checkpoint directory name)")
    .option("--log-level <level>", "pino log level", "info")
    .option("--checkpoint-root <dir>", "the only directory tree /v1/load_weights may read; absent: load_weights is off")
    .option("--key <key>", "admin key of /v1/load_weights, /pause, /resume (visible in ps: prefer ARCLIGHT_KEY)")
    .option("--key-file <path>", "file whose first line is the admin key; also ARCLIGHT_KEY_FILE")
    .option("--tool-call-parser <name>", "hermes, llama3_json, qwen3_coder, mistral, deepseek_v3 or pythonic", "hermes")
    .option("--reasoning-parser <name>", "deepseek_r1 or qwen3: answer <think> text as message.reasoning")
    .option("--shutdown-grace-seconds <s>", "on SIGTERM, seconds in-flight requests get (default 30)", Number)
    .action(serveFromFlags);
}

/**
 * `engine serve`'s action: checks the flags and serves.
 * @param flags - commander's parsed flags
 * @throws {CliError} naming the first bad flag
 */
async function serveFromFlags(flags: Record<string, unknown>): Promise<void> {
  const parsed = EngineServeConfigSchema.safeParse({
    model: flags.model ?? (flags.engine === "torch" ? TORCH_DEFAULT_MODEL : undefined),
    host: flags.host,
    port: flags.port,
    seed: flags.seed,
    decode_threads: flags.decodeThreads,
    model_name: flags.modelName,
    log_level: flags.logLevel,
    checkpoint_root: flags.checkpointRoot,
    shutdown_grace_seconds: flags.shutdownGraceSeconds,
    tool_call_parser: flags.toolCallParser,
    reasoning_parser: flags.reasoningParser,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CliError(`--${String(issue?.path[0] ?? "").replaceAll("_", "-")}: ${issue?.message}`);
  }
  if (flags.engine !== "embedded" && flags.engine !== "torch")
    throw new CliError(`--engine ${String(flags.engine)}: expected embedded or torch`);
  if (flags.engine === "torch" && parsed.data.decode_threads !== 1)
    throw new CliError(
      `--decode-threads ${parsed.data.decode_threads} with --engine torch: the embedded engine's setting; the ` +
        "torch engine samples with PyTorch's own threads or vLLM",
    );
  const key = resolveKey("engine serve", flags as { key?: string; keyFile?: string }, process.env);
  await serve(Object.freeze(parsed.data), flags.engine, torchConfigFromFlags(flags), key);
}

/**
 * The torch settings the serve flags give.
 * @throws {CliError} naming the flag that does not parse
 */
function torchConfigFromFlags(flags: Record<string, unknown>): TorchEngineConfig {
  const rank = flags.loraRank as number;
  if (rank < 0) throw new CliError(`--lora-rank ${rank}: expected 0 (train every weight) or a positive rank`);
  const alpha = flags.loraAlpha === undefined ? null : Number(flags.loraAlpha);
  const targets = String(flags.loraTargets)
    .split(",")
    .filter((t) => t !== "");
  const parsed = TorchEngineConfigSchema.safeParse({
    python: flags.python,
    device: flags.device,
    dtype: flags.dtype,
    lora: rank > 0 ? { rank, alpha, targets } : null,
    url: flags.workerUrl ?? null,
    activation_checkpointing: flags.activationCheckpointing === true,
    logprob_chunk: flags.logprobChunk,
    nproc_per_node: flags.nprocPerNode ?? null,
    nnodes: flags.nnodes,
    rdzv_endpoint: flags.rdzvEndpoint ?? null,
    node_rank: flags.nodeRank,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue?.path ?? [];
    const flag = path[0] === "lora" ? `lora-${String(path[1] ?? "rank")}` : String(path[0] ?? "").replaceAll("_", "-");
    throw new CliError(`--${flag === "url" ? "worker-url" : flag}: ${issue?.message}`);
  }
  return Object.freeze(parsed.data);
}
