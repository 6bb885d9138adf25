/**
 * @module `RemoteEngine`: the `Engine` (with its `Tokenizer` and `ChatTemplate`) of a torch worker reached over the
 * remote-engine protocol. Connect to a running worker, or start one as a child process that `dispose` stops.
 * Tokenizing and chat rendering run locally from the worker's own tokenizer files.
 */
import { once } from "node:events";
import { resolve } from "node:path";
import type { ServerChild } from "../../process/server-child.js";
import { HfTokenizer } from "../../wire/hf-tokenizer.js";
import type {
  Engine,
  GenerateOptions,
  GenerationRequest,
  GenerationResult,
  LossConfig,
  OptimizerConfig,
  TrainMetrics,
  TrainRow,
} from "../engine.js";
import { HfChatTemplate } from "./hf-chat-template.js";
import {
  GenerateAnswerSchema,
  InfoSchema,
  LogprobsAnswerSchema,
  PROTOCOL_VERSION,
  TokenizerFilesSchema,
  TrainAnswerSchema,
  toWireLoss,
  toWireOptimizer,
  toWireRequest,
  toWireRow,
  VersionAnswerSchema,
  type WorkerInfo,
} from "./protocol.js";
import { TorchWorkerError, WorkerClient } from "./worker-client.js";
import { startTorchWorker, type TorchWorkerChild, type TorchWorkerOptions } from "./worker-process.js";

/**
 * A torch worker behind the `Engine` interface: its first LoRA adapter (or its full weights), or, as
 * {@link RemoteEngine.adapterEngine} returns, another of its named adapters or its base weights.
 */
export class RemoteEngine implements Engine {
  /** The model's tokenizer (tokenizers.js on the worker's tokenizer.json). */
  readonly tokenizer: HfTokenizer;
  /** The model's own chat template. */
  readonly chatTemplate: HfChatTemplate;
  private version: number;

  private constructor(
    private readonly client: WorkerClient,
    /** What the worker reported when connected (model, device, dtype, LoRA, parameter counts). */
    readonly info: WorkerInfo,
    tokenizer: HfTokenizer,
    chatTemplate: HfChatTemplate,
    private readonly child: ServerChild | null,
    /** The adapter every call names (`adapter` on the wire); null: the worker's first one, or its full weights. */
    private readonly adapter: string | null = null,
    /** A view of another engine's worker: closing it leaves the connection open. */
    private readonly view = false,
  ) {
    this.tokenizer = tokenizer;
    this.chatTemplate = chatTemplate;
    this.version = adapter === null ? info.policy_version : (info.policy_versions[adapter] ?? 0);
  }

  /**
   * The engine of one of the worker's adapters (its own weights, optimiser and policy version), or of its base
   * weights with `base` (adapters off: generate and logprobs only, it never trains). Shares this engine's
   * connection; its `dispose` leaves the worker running (this engine's stops it).
   * @param name - an adapter the worker was started with (`--adapters`), or `base`
   * @throws {RangeError} when the worker has no such adapter, or no LoRA for `base`
   */
  adapterEngine(name: string): RemoteEngine {
    const known = name === "base" ? this.info.lora !== null : this.info.adapters.includes(name);
    if (!known) {
      const have = this.info.adapters.length === 0 ? "none (full fine-tuning)" : this.info.adapters.join(", ");
      throw new RangeError(`torch worker ${this.url} has no adapter "${name}" (its adapters: ${have})`);
    }
    return new RemoteEngine(this.client, this.info, this.tokenizer, this.chatTemplate, null, name, true);
  }

  /**
   * Connects to a running worker.
   * @param url - its base URL
   * @param child - the worker process when this side started it (`dispose` then stops it)
   * @returns the engine
   * @throws {TorchWorkerError} when the worker is unreachable or speaks another protocol version
   */
  static async connect(url: string, child: ServerChild | null = null): Promise<RemoteEngine> {
    const client = new WorkerClient(url.replace(/\/+$/, ""), () => describeExit(child));
    const info = await client.get("/v1/info", InfoSchema);
    if (info.protocol_version !== PROTOCOL_VERSION)
      throw new TorchWorkerError(
        `torch worker ${url} speaks protocol ${info.protocol_version}, this arclight speaks ${PROTOCOL_VERSION}`,
      );
    const files = await client.get("/v1/tokenizer", TokenizerFilesSchema);
    const tokenizer = new HfTokenizer(files, info.vocab_size);
    const template = new HfChatTemplate(files, tokenizer, info.eos_token_ids);
    return new RemoteEngine(client, info, tokenizer, template, child);
  }

  /**
   * Starts a worker child process and connects to it.
   * @param options - Python interpreter, model, device, dtype, LoRA, …
   * @returns the engine; `dispose` stops the worker
   * @throws {TorchPackageMissing} when the interpreter lacks the `arclight-torch` package
   * @throws {Error} when the worker exits before listening
   */
  static async start(options: TorchWorkerOptions): Promise<RemoteEngine> {
    const child = await startTorchWorker(options);
    try {
      return await RemoteEngine.connect(child.url, child);
    } catch (err) {
      await child.stop();
      throw err;
    }
  }

  /** The worker's base URL. */
  get url(): string {
    return this.client.url;
  }

  /** Process id of the worker when this side started it, else null. */
  get workerPid(): number | null {
    return this.child?.process.pid ?? null;
  }

  /** Version of the worker's weights as of its last answer (+1 per applied step and per loaded checkpoint). */
  get policyVersion(): number {
    return this.version;
  }

  /** Longest prompt + response the worker accepts (tokens). */
  get contextLength(): number {
    return this.info.context_length;
  }

  /**
   * Generates on the worker, which batches the requests of concurrent calls together. `onToken` is called for each
   * token once the sequence's answer arrives (the protocol does not stream); an aborted call ends every sequence
   * with `finishReason: "abort"` and no tokens.
   * @throws {RangeError} for a prompt that does not fit the context or holds an id outside the vocabulary
   * @throws {TorchWorkerError} when the worker fails
   */
  async generate(requests: GenerationRequest[], options: GenerateOptions = {}): Promise<GenerationResult[]> {
    for (const r of requests) this.checkPrompt(r.promptTokenIds);
    let answer: import("zod").infer<typeof GenerateAnswerSchema>;
    try {
      const body = this.named({ requests: requests.map(toWireRequest) });
      answer = await this.client.post("/v1/generate", body, GenerateAnswerSchema, {
        signal: options.signal,
      });
    } catch (err) {
      if (!options.signal?.aborted) throw err;
      return requests.map((r) => aborted(r, this.version));
    }
    this.version = answer.policy_version;
    return answer.results.map((r, index) => {
      for (const [t, tokenId] of r.token_ids.entries()) options.onToken?.(index, { tokenId, logprob: r.logprobs[t]! });
      return {
        promptTokenIds: r.prompt_token_ids,
        tokenIds: r.token_ids,
        logprobs: r.logprobs,
        finishReason: r.finish_reason,
        stopReason: r.stop_reason,
        policyVersion: r.policy_version,
      };
    });
  }

  /**
   * @throws {RangeError} for an empty row, one longer than the context, or an id outside the vocabulary
   */
  async logprobs(tokenIds_B_T: number[][]): Promise<number[][]> {
    if (tokenIds_B_T.some((row) => row.length === 0)) throw new RangeError("a token sequence must not be empty");
    const answer = await this.client.post(
      "/v1/logprobs",
      this.named({ token_ids: tokenIds_B_T }),
      LogprobsAnswerSchema,
    );
    this.version = answer.policy_version;
    return answer.logprobs;
  }

  /**
   * One step on the worker. Rows whose advantages or IS weights are not finite cannot travel as JSON; such a step is
   * skipped here (`nonFiniteSkipped`), as the worker would skip it.
   * @throws {RangeError} for malformed rows or a step with no masked token
   */
  async trainStep(rows: TrainRow[], loss: LossConfig, optimizer: OptimizerConfig): Promise<TrainMetrics> {
    if (rows.length === 0) throw new RangeError("trainStep needs at least one row");
    const nonFinite = rows.some((r) => [...r.advantages, ...(r.isWeights ?? [])].some((x) => !Number.isFinite(x)));
    if (nonFinite) return skippedMetrics(rows);
    const body = this.named({
      rows: rows.map(toWireRow),
      loss: toWireLoss(loss),
      optimizer: toWireOptimizer(optimizer),
    });
    const { metrics, policy_version } = await this.client.post("/v1/train_step", body, TrainAnswerSchema);
    this.version = policy_version;
    return {
      loss: metrics.loss ?? Number.NaN,
      gradNorm: metrics.grad_norm ?? Number.NaN,
      entropy: metrics.entropy,
      clipFraction: metrics.clip_fraction,
      approxKl: metrics.approx_kl,
      tokens: metrics.tokens,
      ...(metrics.non_finite_skipped ? { nonFiniteSkipped: true } : {}),
    };
  }

  /** Writes the checkpoint on the worker's file system (a Hugging Face folder; see docs/torch-engine.md). */
  async saveCheckpoint(dir: string): Promise<void> {
    const absolute = resolve(dir);
    await this.client.post("/v1/save_checkpoint", this.named({ dir: absolute }), VersionAnswerSchema, {
      checkpointDir: dir,
    });
  }

  /**
   * @throws {CheckpointInvalid} `missing` when nothing is at `dir`, `invalid` for another model or kind
   */
  async loadCheckpoint(dir: string): Promise<void> {
    const absolute = resolve(dir);
    const answer = await this.client.post("/v1/load_checkpoint", this.named({ dir: absolute }), VersionAnswerSchema, {
      checkpointDir: dir,
    });
    this.version = answer.policy_version;
  }

  /** Starts the worker's optimiser afresh (AdamW moments zero); the weights stay. */
  async resetOptimizer(): Promise<void> {
    await this.client.post("/v1/reset_optimizer", this.named({}), VersionAnswerSchema);
  }

  /** Closes the connection pool and stops the worker when this side started it. */
  dispose(): void {
    void this.close();
  }

  /** As `dispose`, awaiting the worker's exit; an adapter's engine closes nothing. */
  async close(): Promise<void> {
    if (this.view) return;
    await this.client.close();
    await this.child?.stop();
  }

  /** A request body naming this engine's adapter, when it has one. */
  private named<T extends object>(body: T): T & { adapter?: string } {
    return this.adapter === null ? body : { ...body, adapter: this.adapter };
  }

  private checkPrompt(promptTokenIds: number[]): void {
    if (promptTokenIds.length === 0) throw new RangeError("a token sequence must not be empty");
    if (promptTokenIds.length >= this.contextLength)
      throw new RangeError(
        `prompt of ${promptTokenIds.length} tokens does not fit the context of ${this.contextLength} tokens ` +
          "(at least one token must remain for the response)",
      );
  }
}

function aborted(request: GenerationRequest, policyVersion: number): GenerationResult {
  const base = { tokenIds: [], logprobs: [], stopReason: null, policyVersion };
  return { promptTokenIds: request.promptTokenIds, finishReason: "abort", ...base };
}

function skippedMetrics(rows: TrainRow[]): TrainMetrics {
  const tokens = rows.reduce((sum, r) => sum + r.lossMask.slice(1).reduce((a, b) => a + b, 0), 0);
  const base = { entropy: Number.NaN, clipFraction: 0, approxKl: 0 };
  return { loss: Number.NaN, gradNorm: Number.NaN, tokens, nonFiniteSkipped: true, ...base };
}

/**
 * How the worker process ended, for an error message: a lost connection usually means it died, and its exit event
 * may come a moment after the socket closed, so wait for it up to `EXIT_WAIT_MS`.
 */
async function describeExit(child: ServerChild | null): Promise<string | null> {
  const p = child?.process;
  if (!p) return null;
  if (p.exitCode === null && p.signalCode === null)
    await Promise.race([once(p, "exit"), new Promise((resolve) => setTimeout(resolve, EXIT_WAIT_MS).unref())]);
  if (p.exitCode === null && p.signalCode === null) return null;
  const rank = child !== null && "rankFailure" in child ? (child as TorchWorkerChild).rankFailure() : null;
  return `(pid ${p.pid}) exited with ${p.signalCode ?? `code ${p.exitCode}`}${rank === null ? "" : ` (${rank})`}`;
}

/**
 * Longest wait for a dying worker's exit event when a call to it failed (ms): with several ranks, torchrun first
 * notices the failed rank, stops the others, then the launcher exits.
 */
const EXIT_WAIT_MS = 10_000;
