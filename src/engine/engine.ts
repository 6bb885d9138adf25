/**
 * @module The `Engine` interface: inference and training behind one API, with the `Tokenizer` and `ChatTemplate` the
 * engine provides. The trainer and the OpenAI-compatible engine server depend on these interfaces only; `embedded/`
 * is the default CPU implementation, other engines plug in beside it.
 */
import type { ChatTemplate } from "./chat-template.js";
import type { Tokenizer } from "./tokenizer.js";

/** How to sample one sequence. */
export interface SamplingParams {
  /** Softmax temperature; 0 means greedy. */
  temperature: number;
  /** Nucleus sampling mass in (0, 1]; 1 disables it. */
  topP: number;
  /** Keep only the k most likely tokens; 0 disables it. */
  topK: number;
  /** Maximum new tokens (tokens). */
  maxTokens: number;
  /** Token ids that end generation; the stop id is included in the output (as vLLM does). */
  stopTokenIds: number[];
  /** Strings that end generation; the ids that formed the string stay in the output, the caller cuts the text. */
  stop: string[];
  /** Seed of this sequence's sampler; the same seed and prompt give the same tokens. */
  seed?: number;
}

/** One sequence to generate. */
export interface GenerationRequest {
  /** Prompt token ids, [promptLen]. */
  promptTokenIds: number[];
  sampling: SamplingParams;
}

/** One generated token as it is produced (for streaming). */
export interface TokenEvent {
  tokenId: number;
  /** Logprob (nats) of the token under the distribution actually sampled from (after temperature/top-k/top-p). */
  logprob: number;
}

/** Why generation ended: a stop token or stop string (`stop`), `maxTokens` or the context (`length`), or cancelled. */
export type FinishReason = "stop" | "length" | "abort";

/** Result of one sequence. */
export interface GenerationResult {
  /** [promptLen] */
  promptTokenIds: number[];
  /** Generated ids, stop id included, [respLen]. */
  tokenIds: number[];
  /** Logprob (nats) of each generated id under the sampled distribution, [respLen]. */
  logprobs: number[];
  finishReason: FinishReason;
  /** The stop token id or stop string that ended generation; null for EOS-free endings and length. */
  stopReason: number | string | null;
  /** Policy version of the weights that produced every token of this sequence. */
  policyVersion: number;
}

/** Options of one `generate` call. */
export interface GenerateOptions {
  /** Called for each new token of request `index`, in order, as soon as it is sampled. */
  onToken?: (index: number, token: TokenEvent) => void;
  /** Aborts the call; unfinished sequences end with `finishReason: "abort"`. */
  signal?: AbortSignal;
}

/** One training row: a token sequence with per-token targets. Every array is [T] (the row's own length). */
export interface TrainRow {
  /** Prompt + response token ids, [T]. */
  tokenIds: number[];
  /** 1 where the token at this position is trained on (a response token), else 0, [T]. */
  lossMask: number[];
  /** Per-token advantage, [T] (0 where lossMask is 0). */
  advantages: number[];
  /** Old-policy logprobs (nats) of each token, [T]; positions outside the mask are ignored. */
  oldLogprobs?: number[];
  /** Reference-policy logprobs (nats) for the KL term, [T]. */
  refLogprobs?: number[];
  /** Truncated importance-sampling weight per token, [T] (already capped by the caller). */
  isWeights?: number[];
  /** Weight of this row's tokens in the loss when `aggregation` is `weighted` (e.g. 1 / (tokens in its rollout)). */
  weight?: number;
}

/** The loss of one `trainStep`. */
export type LossConfig =
  | {
      kind: "ppo";
      /** Lower clip ratio ε_low: ratios below 1 − ε_low are clipped. */
      clipLow: number;
      /** Upper clip ratio ε_high: ratios above 1 + ε_high are clipped. */
      clipHigh: number;
      /** Dual-clip constant c (> 1) for negative advantages; undefined disables dual clip. */
      dualClip?: number;
      /** KL coefficient β against `refLogprobs`; 0 disables the KL term. */
      klCoef: number;
      /**
       * The policy objective (default `ppo`): `ppo` clips each token's ratio; `gspo` uses one ratio per row (the
       * geometric mean of its tokens' ratios) and clips it for the whole row; `cispo` weights REINFORCE's
       * −A·logprob by the clipped ratio as a constant, so every token keeps a gradient. Formulas: `embedded/loss.ts`.
       */
      objective?: PolicyObjective;
      /**
       * `token-mean`: mean over all masked tokens of the step. `weighted`: Σ weight·loss / Σ weight, both sums over
       * the step's masked tokens, each token carrying its row's `weight`; with weight = 1 / (masked tokens of the
       * row's rollout) this is the mean over rollouts of each rollout's token-mean. `constant`: Σ loss / `normalizer`,
       * a denominator that does not depend on lengths (Dr. GRPO).
       */
      aggregation: LossAggregation;
      /** `constant` aggregation only: the step's denominator (> 0), e.g. rollouts × a fixed length. */
      normalizer?: number;
    }
  | { kind: "sft"; aggregation: "token-mean" | "weighted" };

/** The policy objectives of a PPO-kind loss (see {@link LossConfig}). */
export type PolicyObjective = "ppo" | "gspo" | "cispo";

/** How a step's per-token losses are summed and divided (see {@link LossConfig}). */
export type LossAggregation = "token-mean" | "weighted" | "constant";

/** Optimiser settings of one `trainStep`. */
export interface OptimizerConfig {
  learningRate: number;
  /** AdamW decoupled weight decay. */
  weightDecay: number;
  /** Global gradient-norm clip; 0 disables it. */
  maxGradNorm: number;
  /** Rows per micro-batch (gradient accumulation); the step applies one update. */
  microBatchSize: number;
}

/** What one `trainStep` measured. */
export interface TrainMetrics {
  /** Loss value (nats per token for token-mean). */
  loss: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** Mean entropy (nats) of the policy over masked tokens. */
  entropy: number;
  /** Fraction of masked tokens whose ratio was clipped (PPO only; 0 for SFT). */
  clipFraction: number;
  /** Mean approximate KL to the old policy over masked tokens (nats). */
  approxKl: number;
  /** Masked tokens trained on. */
  tokens: number;
  /**
   * True when the step's loss or gradient norm was not finite, or the update would have written a non-finite weight:
   * nothing changed (weights, optimiser state, policy version). `loss` and `gradNorm` then carry the non-finite
   * values measured. Absent or false for an applied step. See `nonfinite-guard.ts`.
   */
  nonFiniteSkipped?: boolean;
}

/** Inference and training of one policy. */
export interface Engine {
  /** Grows by 1 with every weight change (train step or load). */
  readonly policyVersion: number;
  /** Maximum prompt + response length (tokens). */
  readonly contextLength: number;
  /** The tokenizer of this engine's vocabulary (the engine server encodes and detokenises with it). */
  readonly tokenizer: Tokenizer;
  /** The chat format this engine's model was trained on (the engine server renders chats with it). */
  readonly chatTemplate: ChatTemplate;
  /**
   * Generates one sequence per request. Concurrent calls are decoded together (continuous batching).
   * @throws {RangeError} a prompt that does not fit the context
   */
  generate(requests: GenerationRequest[], options?: GenerateOptions): Promise<GenerationResult[]>;
  /**
   * Logprob (nats) of each token given the ones before it, [batch, seqLen]; position 0 has no context and is 0.
   * @param tokenIds_B_T - ragged batch of sequences
   */
  logprobs(tokenIds_B_T: number[][]): Promise<number[][]>;
  /**
   * One optimiser update over `rows` (micro-batched), under the non-finite guard of `nonfinite-guard.ts`: recorded
   * logprobs floored, ratios in log space, a non-finite step skipped. Bumps `policyVersion` unless skipped.
   */
  trainStep(rows: TrainRow[], loss: LossConfig, optimizer: OptimizerConfig): Promise<TrainMetrics>;
  /** Writes weights (safetensors), config (JSON) and optimiser state to `dir`. */
  saveCheckpoint(dir: string): Promise<void>;
  /**
   * Loads a checkpoint written by `saveCheckpoint`; training then continues exactly. Bumps `policyVersion`.
   * When it throws, the engine keeps its weights.
   * @param dir - checkpoint directory
   * @throws {CheckpointInvalid} `missing` when nothing is at `dir`, `invalid` for anything else wrong with it,
   * including another model shape (the engine server answers 404 / 400)
   */
  loadCheckpoint(dir: string): Promise<void>;
  /**
   * Starts the optimiser afresh (AdamW moments zero, step 0); the weights and the policy version stay. Used between
   * training phases (SFT, then RL from its checkpoint).
   */
  resetOptimizer(): void | Promise<void>;
  /** Frees the model's memory. */
  dispose(): void;
}
