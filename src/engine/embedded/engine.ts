/**
 * @module `EmbeddedEngine`: the default `Engine`, a small GPT on tfjs-wasm in process. Numeric calls run between two
 * decode steps, so nothing interleaves with a half-done step; a decode step during a multi-thread train step's
 * wait sees the weights from before the update.
 */

import { CheckpointInvalid } from "../checkpoint-error.js";
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
import { AdamW } from "./adamw.js";
import { initWasmBackend } from "./backend.js";
import { Batcher } from "./batcher.js";
import { ChatMLTemplate } from "./chat-template.js";
import { readCheckpoint, writeCheckpoint } from "./checkpoint.js";
import { MAX_TRAIN_THREADS, MODEL_PRESETS, type ModelConfig, type ModelPreset, parseModelConfig } from "./config.js";
import { DecodeThread } from "./decode-thread.js";
import { Gpt } from "./model.js";
import { ParallelTrainer } from "./parallel-train.js";
import { initialValues, type PositionInit } from "./params.js";
import type { SafeTensor } from "./safetensors.js";
import { scoreTokens } from "./score.js";
import { BYTE_VOCAB_SIZE, ByteTokenizer } from "./tokenizer.js";
import { trainStep } from "./train.js";

/** How to build a fresh engine. */
export interface EmbeddedEngineOptions {
  /** A model shape or the name of a preset (`tiny`, `agent`, `bench`, `small`). */
  config: ModelConfig | ModelPreset;
  /** Weight-init seed; the same config and seed give identical weights. Default 0. */
  seed?: number;
  /** Start of the learned position table (see {@link PositionInit}). Default `normal`. */
  positionInit?: PositionInit;
  /** Most sequences decoded together (rows of the decode batch). Default 64. */
  maxBatchSize?: number;
  /** Rows per forward pass in `logprobs`. Default 32. */
  scoreBatchSize?: number;
  /** Threads per training step (`parallel-train.ts`), each a copy of the weights. Default 1. */
  trainThreads?: number;
  /** Decoding threads (`decode-thread.ts`), each adding its own wasm heap. Default 1. */
  decodeThreads?: number;
}

/** A thread-count option's value (default 1). @throws {RangeError} outside 1..{@link MAX_TRAIN_THREADS} */
function threadCount(option: string, value: number | undefined): number {
  const threads = value === undefined ? 1 : value;
  if (typeof threads !== "number" || !Number.isInteger(threads) || threads < 1 || threads > MAX_TRAIN_THREADS) {
    const shown = typeof threads === "string" ? JSON.stringify(threads) : String(threads);
    throw new RangeError(`${option} must be an integer from 1 to ${MAX_TRAIN_THREADS}, got ${shown}`);
  }
  return threads;
}

/** A call on an engine after {@link EmbeddedEngine.dispose}, or a generation that dispose ended. */
export class EngineDisposed extends Error {
  constructor() {
    super("the embedded engine was disposed");
    this.name = "EngineDisposed";
  }
}

/** Why a config cannot run behind the byte tokenizer: `vocab` must equal its id count. */
function tokenizerMismatch(config: ModelConfig): string | undefined {
  return config.vocab === BYTE_VOCAB_SIZE
    ? undefined
    : `vocab must be ${BYTE_VOCAB_SIZE} (the byte tokenizer's ids: 256 bytes and ${BYTE_VOCAB_SIZE - 256} special tokens), got ${config.vocab}`;
}

/** @throws {RangeError} naming a sampling setting the sampler cannot honour */
function checkSampling(sampling: GenerationRequest["sampling"]): void {
  const { temperature, topP, topK, maxTokens } = sampling;
  const bad = (name: string, value: number, expected: string): RangeError =>
    new RangeError(`sampling ${name} must be ${expected}, got ${value}`);
  if (!(Number.isFinite(temperature) && temperature >= 0)) throw bad("temperature", temperature, "a number >= 0");
  if (!(topP > 0 && topP <= 1)) throw bad("topP", topP, "in (0, 1]");
  if (!(Number.isInteger(topK) && topK >= 0)) throw bad("topK", topK, "an integer >= 0");
  if (!(Number.isInteger(maxTokens) && maxTokens >= 0)) throw bad("maxTokens", maxTokens, "an integer >= 0");
}

/** The embedded CPU engine. Build with {@link EmbeddedEngine.create} or {@link EmbeddedEngine.load}. */
export class EmbeddedEngine implements Engine {
  /** The byte tokenizer prompts are encoded with. */
  readonly tokenizer = new ByteTokenizer();
  /** The ChatML template chats are rendered with. */
  readonly chatTemplate = new ChatMLTemplate(this.tokenizer);
  /** The GPT whose weights train and serve. */
  readonly model: Gpt;
  private version = 0;
  private optimizer = new AdamW();
  private readonly batcher: Batcher;
  private readonly scoreBatchSize: number;
  private readonly parallel: ParallelTrainer | undefined;
  private decodeThreads: DecodeThread[];
  private readonly maxBatchSize: number;
  private disposed = false;

  private constructor(model: Gpt, options: Omit<EmbeddedEngineOptions, "config" | "seed">, version = 0) {
    this.model = model;
    this.version = version;
    this.scoreBatchSize = options.scoreBatchSize ?? 32;
    const threads = threadCount("trainThreads", options.trainThreads);
    const decoders = threadCount("decodeThreads", options.decodeThreads);
    this.parallel = threads > 1 ? new ParallelTrainer(threads) : undefined;
    this.maxBatchSize = options.maxBatchSize ?? 64;
    this.batcher = new Batcher(model, {
      tokenizer: this.tokenizer,
      maxBatchSize: this.maxBatchSize,
      policyVersion: () => this.version,
    });
    this.decodeThreads = Array.from({ length: decoders - 1 }, () => this.startDecodeThread());
  }

  /**
   * An engine with fresh weights (policy version 0).
   * @throws {z.ZodError} | {RangeError} (vocab, thread counts) | {WasmBackendUnavailable}
   */
  static async create(options: EmbeddedEngineOptions): Promise<EmbeddedEngine> {
    await initWasmBackend();
    const config = parseModelConfig(
      typeof options.config === "string" ? MODEL_PRESETS[options.config] : options.config,
    );
    const vocabProblem = tokenizerMismatch(config);
    if (vocabProblem) throw new RangeError(`model config: ${vocabProblem}`);
    return new EmbeddedEngine(new Gpt(config, initialValues(config, options.seed ?? 0, options.positionInit)), options);
  }

  /**
   * An engine from a checkpoint directory, at its stored policy version.
   * @throws {CheckpointInvalid} | {WasmBackendUnavailable}
   */
  static async load(
    dir: string,
    options: Omit<EmbeddedEngineOptions, "config" | "seed"> = {},
  ): Promise<EmbeddedEngine> {
    await initWasmBackend();
    const checkpoint = await readCheckpoint(dir);
    const vocabProblem = tokenizerMismatch(checkpoint.config);
    if (vocabProblem) throw new CheckpointInvalid(dir, "invalid", `config.json: ${vocabProblem}`);
    const values = new Map([...checkpoint.weights].map(([name, t]) => [name, t.data]));
    const engine = new EmbeddedEngine(new Gpt(checkpoint.config, values), options, checkpoint.policyVersion);
    engine.restoreOptimizer(checkpoint.optimizer);
    return engine;
  }

  /** Version of the current weights: +1 per train step and per loaded checkpoint. */
  get policyVersion(): number {
    return this.version;
  }

  /** Decode worker threads taking calls now (`decodeThreads` − 1 once they have started; 0 while they start). */
  get readyDecodeThreads(): number {
    return this.decodeThreads.filter((thread) => thread.usable).length;
  }

  /** Longest sequence (tokens), prompt plus response. */
  get contextLength(): number {
    return this.model.config.context;
  }

  /**
   * Generates one sequence per request on the shared decode loop; logprobs are of the distribution sampled from
   * (`sample.ts`). A sequence in flight across a weight update reports the version it started on.
   * @throws {RangeError} for a bad prompt; {DecodeWorkerFailed} when its decode thread fails
   */
  async generate(requests: GenerationRequest[], options?: GenerateOptions): Promise<GenerationResult[]> {
    this.checkOpen();
    for (const request of requests) {
      this.checkPrompt(request.promptTokenIds);
      checkSampling(request.sampling);
    }
    // A worker that failed is replaced; the new one takes calls once it has loaded the current weights.
    this.decodeThreads = this.decodeThreads.map((thread) => (thread.failed ? this.startDecodeThread() : thread));
    const local = this.batcher.load;
    let target: Batcher | DecodeThread = this.batcher;
    let least = local.running + local.pending;
    for (const thread of this.decodeThreads)
      if (thread.usable && thread.load < least) {
        target = thread;
        least = thread.load;
      }
    return target.submit(requests, options);
  }

  /**
   * @throws {RangeError} for an empty row, a row longer than the context, or an id outside the vocabulary
   */
  async logprobs(tokenIds_B_T: number[][]): Promise<number[][]> {
    this.checkOpen();
    for (const row of tokenIds_B_T) this.checkRow(row, this.contextLength);
    return scoreTokens(this.model, tokenIds_B_T, this.scoreBatchSize);
  }

  /**
   * Bumps the policy version unless the non-finite guard skipped the step.
   * @throws {RangeError} for malformed rows; {GradientWorkerFailed} with the weights unchanged
   */
  async trainStep(rows: TrainRow[], loss: LossConfig, optimizer: OptimizerConfig): Promise<TrainMetrics> {
    this.checkOpen();
    const metrics = this.parallel
      ? await this.parallel.trainStep(this.model, this.optimizer, rows, loss, optimizer).catch((err: unknown) => {
          throw this.disposed ? new EngineDisposed() : err; // dispose() stopped its gradient workers
        })
      : trainStep(this.model, this.optimizer, rows, loss, optimizer);
    if (metrics.nonFiniteSkipped !== true) {
      this.version += 1;
      this.syncDecodeThreads();
    }
    return metrics;
  }

  /** Writes weights, config and optimiser state, each file atomically. */
  async saveCheckpoint(dir: string): Promise<void> {
    this.checkOpen();
    const weights = new Map<string, SafeTensor>();
    for (const [name, variable] of this.model.byName)
      weights.set(name, { shape: variable.shape, data: variable.dataSync() as Float32Array });
    const moments = new Map<string, SafeTensor>();
    for (const [kind, store] of [
      ["m", this.optimizer.m],
      ["v", this.optimizer.v],
    ] as const)
      for (const [name, variable] of store)
        moments.set(`${kind}.${name}`, { shape: variable.shape, data: variable.dataSync() as Float32Array });
    await writeCheckpoint(dir, {
      config: this.model.config,
      policyVersion: this.version,
      weights,
      optimizer: { step: this.optimizer.step, constants: this.optimizer.constants, moments },
    });
  }

  /**
   * Hot-swaps a checkpoint's weights and optimiser state; it is checked in full first, so a throw changes nothing.
   * @throws {CheckpointInvalid} also when its model shape differs
   */
  async loadCheckpoint(dir: string): Promise<void> {
    this.checkOpen();
    const checkpoint = await readCheckpoint(dir);
    this.checkOpen(); // dispose() may have run while the checkpoint was read
    // readCheckpoint checked every weight against the checkpoint's config, so equal configs mean fitting weights.
    if (JSON.stringify(checkpoint.config) !== JSON.stringify(this.model.config))
      throw new CheckpointInvalid(
        dir,
        "invalid",
        `has config ${JSON.stringify(checkpoint.config)}, the engine has ${JSON.stringify(this.model.config)}`,
      );
    this.model.assignWeights([...this.model.byName.keys()].map((name) => [name, checkpoint.weights.get(name)!.data]));
    this.restoreOptimizer(checkpoint.optimizer);
    this.version += 1;
    this.syncDecodeThreads();
  }

  /**
   * Starts AdamW afresh, weights kept: between phases (SFT → RL), since β2 = 0.999 decays slowly and SFT's larger
   * second moments would scale RL updates down for hundreds of steps.
   */
  resetOptimizer(): void {
    const optimizer = new AdamW(this.optimizer.constants);
    this.optimizer.dispose();
    this.optimizer = optimizer;
  }

  /** Frees weights and moments and stops workers; calls in flight and later fail with {@link EngineDisposed}. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.batcher.close(new EngineDisposed());
    this.parallel?.dispose();
    for (const thread of this.decodeThreads) thread.terminate(new EngineDisposed());
    this.optimizer.dispose();
    this.model.dispose();
  }

  /** A decode worker with the current weights and version. */
  private startDecodeThread(): DecodeThread {
    return new DecodeThread({
      config: this.model.config,
      weights: this.model.readWeights(),
      version: this.version,
      maxBatchSize: this.maxBatchSize,
    });
  }

  /** @throws {EngineDisposed} once {@link EmbeddedEngine.dispose} ran */
  private checkOpen(): void {
    if (this.disposed) throw new EngineDisposed();
  }

  /** Posts the current weights and version to every decode worker. */
  private syncDecodeThreads(): void {
    for (const thread of this.decodeThreads) thread.setWeights(this.version, this.model.readWeights());
  }

  private restoreOptimizer(state: Awaited<ReturnType<typeof readCheckpoint>>["optimizer"]): void {
    const shapes = new Map([...this.model.byName].map(([name, v]) => [name, v.shape]));
    const optimizer = new AdamW(state.constants);
    optimizer.restore(state.step, new Map([...state.moments].map(([key, t]) => [key, t.data])), shapes);
    this.optimizer.dispose();
    this.optimizer = optimizer;
  }

  private checkPrompt(promptTokenIds: number[]): void {
    if (promptTokenIds.length >= this.contextLength)
      throw new RangeError(
        `prompt of ${promptTokenIds.length} tokens does not fit the context of ${this.contextLength} tokens ` +
          "(at least one token must remain for the response)",
      );
    this.checkRow(promptTokenIds, this.contextLength - 1);
  }

  private checkRow(tokenIds: number[], maxLength: number): void {
    if (tokenIds.length === 0) throw new RangeError("a token sequence must not be empty");
    if (tokenIds.length > maxLength)
      throw new RangeError(`sequence of ${tokenIds.length} tokens exceeds the context of ${this.contextLength} tokens`);
    const vocab = this.model.config.vocab;
    for (const id of tokenIds)
      if (!Number.isInteger(id) || id < 0 || id >= vocab)
        throw new RangeError(`token id ${id} is outside the vocabulary [0, ${vocab})`);
  }
}
