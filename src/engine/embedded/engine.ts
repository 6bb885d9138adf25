/**
 * @module `EmbeddedEngine`: the default `Engine`, a small GPT trained and sampled in-process on CPU with tfjs-wasm.
 * Every numeric call runs synchronously between two decode steps (JS is single-threaded), so training, scoring and
 * weight loads never interleave with a half-done step.
 */
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
import { initWasmBackend } from "./backend.js";
import { Batcher } from "./batcher.js";
import { MODEL_PRESETS, type ModelConfig, type ModelPreset, parseModelConfig } from "./config.js";
import { Gpt } from "./model.js";
import { initialValues } from "./params.js";
import { scoreTokens } from "./score.js";
import { ByteTokenizer } from "./tokenizer.js";

/** How to build a fresh engine. */
export interface EmbeddedEngineOptions {
  /** A model shape or the name of a preset (`tiny`, `bench`, `small`). */
  config: ModelConfig | ModelPreset;
  /** Weight-init seed; the same config and seed give identical weights. Default 0. */
  seed?: number;
  /** Most sequences decoded together (rows of the decode batch). Default 64. */
  maxBatchSize?: number;
  /** Rows per forward pass in `logprobs`. Default 32. */
  scoreBatchSize?: number;
}

/** The embedded CPU engine. Build with {@link EmbeddedEngine.create} or {@link EmbeddedEngine.load}. */
export class EmbeddedEngine implements Engine {
  readonly tokenizer = new ByteTokenizer();
  readonly model: Gpt;
  private version = 0;
  private readonly batcher: Batcher;
  private readonly scoreBatchSize: number;

  private constructor(model: Gpt, options: Omit<EmbeddedEngineOptions, "config" | "seed">) {
    this.model = model;
    this.scoreBatchSize = options.scoreBatchSize ?? 32;
    this.batcher = new Batcher(model, {
      tokenizer: this.tokenizer,
      maxBatchSize: options.maxBatchSize ?? 64,
      policyVersion: () => this.version,
    });
  }

  /**
   * Builds an engine with freshly initialised weights (policy version 0).
   * @param options - config or preset name, seed, batch sizes
   * @returns the engine, on the wasm backend
   * @throws {z.ZodError} for an invalid config
   * @throws {WasmBackendUnavailable} when tfjs cannot run on wasm
   */
  static async create(options: EmbeddedEngineOptions): Promise<EmbeddedEngine> {
    await initWasmBackend();
    const config = parseModelConfig(
      typeof options.config === "string" ? MODEL_PRESETS[options.config] : options.config,
    );
    return new EmbeddedEngine(new Gpt(config, initialValues(config, options.seed ?? 0)), options);
  }

  get policyVersion(): number {
    return this.version;
  }

  get contextLength(): number {
    return this.model.config.context;
  }

  /**
   * Generates one sequence per request; concurrent calls share the decode loop (continuous batching). Logprobs are
   * those of the distribution actually sampled from (see `sample.ts`); `<|endoftext|>` always stops a sequence.
   * A sequence in flight when the weights change continues on the new weights and reports the version it started on.
   * @throws {RangeError} for an empty prompt, a prompt of context length or more, or an id outside the vocabulary
   */
  async generate(requests: GenerationRequest[], options?: GenerateOptions): Promise<GenerationResult[]> {
    for (const request of requests) this.checkPrompt(request.promptTokenIds);
    return this.batcher.submit(requests, options);
  }

  /**
   * @throws {RangeError} for an empty row, a row longer than the context, or an id outside the vocabulary
   */
  async logprobs(tokenIds_B_T: number[][]): Promise<number[][]> {
    for (const row of tokenIds_B_T) this.checkRow(row, this.contextLength);
    return scoreTokens(this.model, tokenIds_B_T, this.scoreBatchSize);
  }

  async trainStep(_rows: TrainRow[], _loss: LossConfig, _optimizer: OptimizerConfig): Promise<TrainMetrics> {
    throw new Error("trainStep: not implemented yet");
  }

  async saveCheckpoint(_dir: string): Promise<void> {
    throw new Error("saveCheckpoint: not implemented yet");
  }

  async loadCheckpoint(_dir: string): Promise<void> {
    throw new Error("loadCheckpoint: not implemented yet");
  }

  dispose(): void {
    this.model.dispose();
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
