/**
 * @module Starts a torch worker (`python -m arclight_torch serve …`) as a child process and waits for its URL line;
 * checks first that the configured Python has the package, so a missing install is one clear line.
 */
import { spawnSync } from "node:child_process";
import { type ServerChild, startServerChild } from "../../process/server-child.js";

/** How to start a worker; see docs/torch-engine.md for each flag. */
export interface TorchWorkerOptions {
  /** Python interpreter with the `arclight-torch` package installed. */
  python: string;
  /** A local Hugging Face model folder, or `new:NAME` for a bundled config with random weights. */
  model: string;
  /** `cpu`, `cuda`, `cuda:1`, … Default `cpu`. */
  device?: string;
  /** `float32`, `bfloat16` or `float16`. Default `float32`. */
  dtype?: string;
  /** LoRA adapters instead of full fine-tuning; absent trains every weight. */
  lora?: { rank: number; alpha?: number; targets?: string[] };
  /** Named LoRA adapters on the one base (`--adapters`; needs `lora`), e.g. one per agent; absent: one, `default`. */
  adapters?: readonly string[];
  /** Weight-init seed of `new:NAME`. */
  seed?: number;
  /** Longest prompt + response (tokens); default the model's `max_position_embeddings`. */
  contextLength?: number;
  /** Token budget of one training micro-batch. */
  microBatchTokens?: number;
  /** Torch CPU threads; absent keeps torch's default. */
  threads?: number;
  /** Recompute each decoder layer's activations in backward. Default false. */
  activationCheckpointing?: boolean;
  /** Positions per application of the output layer for logprobs; 0 all at once. Default 1024. */
  logprobChunk?: number;
  /** Ranks under torchrun (`--nproc-per-node`, …); absent: one rank without torchrun. */
  ranks?: { nprocPerNode: number; nnodes?: number; rdzvEndpoint?: string; nodeRank?: number };
  /** How long to wait for the worker to load its model and listen (ms). Default 120,000. */
  startTimeoutMs?: number;
}

/** The configured Python cannot import `arclight_torch`. */
export class TorchPackageMissing extends Error {
  /** @param python - the interpreter that lacks the package */
  constructor(readonly python: string) {
    super(
      `the torch engine needs the arclight-torch Python package in ${python}: ` +
        `run \`${python} -m pip install ./python\` in the arclight repository (or set engine.python)`,
    );
    this.name = "TorchPackageMissing";
  }
}

/** The configured Python does not exist or cannot run (a special case of the package being unavailable there). */
export class TorchPythonMissing extends TorchPackageMissing {
  /**
   * @param python - the interpreter path that did not run
   * @param reason - why, e.g. "ENOENT"
   */
  constructor(python: string, reason: string) {
    super(python);
    this.message =
      `the torch engine's Python ${python} cannot run (${reason}): set engine.python (or --python) to an ` +
      "interpreter that has the arclight-torch package (pip install ./python)";
    this.name = "TorchPythonMissing";
  }
}

/** The worker exited (or stayed silent) before it listened: its own message, on the inherited stderr, says why. */
export class TorchWorkerStartFailed extends Error {
  /**
   * @param model - the `--model` the worker was given
   * @param reason - what the child did, e.g. `torch worker exited (code 2) before listening`
   */
  constructor(
    readonly model: string,
    readonly reason: string,
  ) {
    super(`engine ${model}: ${reason} (its own message is above)`);
    this.name = "TorchWorkerStartFailed";
  }
}

/**
 * The worker's command line.
 * @param options - model, device, dtype, LoRA, seed, limits
 * @returns argv, interpreter first
 */
export function workerArgv(options: TorchWorkerOptions): string[] {
  const argv = [options.python, "-m", "arclight_torch", "serve", "--model", options.model, "--port", "0"];
  const flag = (name: string, value: string | number | undefined) => {
    if (value !== undefined) argv.push(name, String(value));
  };
  flag("--device", options.device);
  flag("--dtype", options.dtype);
  flag("--seed", options.seed);
  flag("--context-length", options.contextLength);
  flag("--micro-batch-tokens", options.microBatchTokens);
  flag("--threads", options.threads);
  flag("--logprob-chunk", options.logprobChunk);
  if (options.activationCheckpointing) argv.push("--activation-checkpointing");
  if (options.ranks) {
    flag("--nproc-per-node", options.ranks.nprocPerNode);
    flag("--nnodes", options.ranks.nnodes);
    flag("--rdzv-endpoint", options.ranks.rdzvEndpoint);
    flag("--node-rank", options.ranks.rdzvEndpoint === undefined ? undefined : options.ranks.nodeRank);
  }
  if (options.lora) {
    flag("--lora-rank", options.lora.rank);
    flag("--lora-alpha", options.lora.alpha);
    flag("--lora-targets", options.lora.targets?.join(","));
    flag("--adapters", options.adapters?.join(","));
  }
  return argv;
}

/** A started worker: with several ranks, what its launcher said about a failed rank. */
export interface TorchWorkerChild extends ServerChild {
  /** `rank R failed: pid P ended with SIGKILL; …` once the launcher printed it, else null. */
  rankFailure(): string | null;
}

/** The launcher's line when a rank fails (python/arclight_torch/distributed.py `launch`). */
const RANK_FAILURE = /^arclight-torch: (rank \d+ failed: .*)$/m;

/**
 * Starts a worker and waits until it listens.
 * @param options - interpreter, model and worker flags
 * @returns the child with its URL and `stop()`
 * @throws {TorchPythonMissing} when the interpreter does not exist or cannot run
 * @throws {TorchPackageMissing} when the interpreter cannot import `arclight_torch`
 * @throws {TorchWorkerStartFailed} when the worker exits before listening (its stderr, inherited, says why) or
 *   times out
 */
export async function startTorchWorker(options: TorchWorkerOptions): Promise<TorchWorkerChild> {
  // `.cli` imports torch, transformers and peft too: a package copied without its dependencies is "missing" as well.
  const check = spawnSync(options.python, ["-c", "import arclight_torch.cli"], { stdio: "ignore" });
  if (check.error !== undefined) {
    throw new TorchPythonMissing(options.python, (check.error as NodeJS.ErrnoException).code ?? check.error.message);
  }
  if (check.status !== 0) throw new TorchPackageMissing(options.python);
  const child = await startServerChild({
    argv: workerArgv(options),
    urlPattern: /arclight-torch listening on (http:\/\/\S+)/,
    what: "torch worker",
    startTimeoutMs: options.startTimeoutMs ?? 120_000,
  }).catch((error: unknown) => {
    throw new TorchWorkerStartFailed(options.model, (error as Error).message);
  });
  let failure: string | null = null;
  let tail = "";
  child.process.stdout?.on("data", (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-4096);
    failure ??= RANK_FAILURE.exec(tail)?.[1] ?? null;
  });
  return { ...child, rankFailure: () => failure };
}
