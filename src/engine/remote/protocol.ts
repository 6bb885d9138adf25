/**
 * @module The remote-engine protocol, version 1, on the TypeScript side: the worker's answers as zod schemas and the
 * request bodies as types, with the conversions from the `Engine` types (wire names are snake_case). The Python side
 * is `python/arclight_torch/schema.py`; docs/torch-engine.md documents both.
 */
import { z } from "zod";
import type { TokenizerFiles } from "../../wire/hf-tokenizer.js";
import type { GenerationRequest, LossConfig, OptimizerConfig, TrainRow } from "../engine.js";
import { clampRecordedLogprob } from "../nonfinite-guard.js";

/** The protocol version this side speaks; a worker reporting another one is refused. */
export const PROTOCOL_VERSION = 1;

/** `GET /v1/info`. */
export const InfoSchema = z.object({
  protocol_version: z.number().int(),
  model: z.string(),
  vocab_size: z.number().int().positive(),
  context_length: z.number().int().positive(),
  eos_token_ids: z.array(z.number().int()),
  policy_version: z.number().int(),
  device: z.string(),
  /** Ranks the model is sharded over (FSDP2); 1 without torchrun. */
  world_size: z.number().int().positive().default(1),
  /** Whether decoder layers recompute their activations in backward. */
  activation_checkpointing: z.boolean().default(false),
  /** Compute dtype; parameters and optimizer state are float32 whatever it is. */
  dtype: z.string(),
  lora: z.object({ rank: z.number(), alpha: z.number(), targets: z.array(z.string()) }).nullable(),
  parameters: z.number().int(),
  trainable_parameters: z.number().int(),
  /** Peak GPU memory allocated by torch so far (bytes); null on CPU. */
  peak_memory_bytes: z.number().int().nullable(),
  /** The worker's LoRA adapters by name (`--adapters`; `default` without it); empty for full fine-tuning. */
  adapters: z.array(z.string()).default([]),
  /** Each adapter's policy version. */
  policy_versions: z.record(z.string(), z.number().int()).default({}),
});
/** What the worker reports about itself. */
export type WorkerInfo = z.infer<typeof InfoSchema>;

/** `GET /v1/tokenizer`: tokenizer.json and tokenizer_config.json (chat template inlined), as loaded by the worker. */
export const TokenizerFilesSchema: z.ZodType<TokenizerFiles> = z.object({
  tokenizer: z.record(z.string(), z.unknown()),
  config: z.record(z.string(), z.unknown()),
});

const versioned = { policy_version: z.number().int() };

/** `POST /v1/generate`. */
export const GenerateAnswerSchema = z.object({
  results: z.array(
    z.object({
      prompt_token_ids: z.array(z.number().int()),
      token_ids: z.array(z.number().int()),
      logprobs: z.array(z.number()),
      finish_reason: z.enum(["stop", "length"]),
      stop_reason: z.union([z.number().int(), z.string(), z.null()]),
      policy_version: z.number().int(),
    }),
  ),
  ...versioned,
});

/** `POST /v1/logprobs`. */
export const LogprobsAnswerSchema = z.object({ logprobs: z.array(z.array(z.number())), ...versioned });

/** `POST /v1/train_step`. */
export const TrainAnswerSchema = z.object({
  metrics: z.object({
    loss: z.number().nullable(),
    grad_norm: z.number().nullable(),
    entropy: z.number(),
    clip_fraction: z.number(),
    approx_kl: z.number(),
    tokens: z.number().int(),
    non_finite_skipped: z.boolean(),
  }),
  ...versioned,
});

/** Answers that carry only the policy version (checkpoints, optimiser reset). */
export const VersionAnswerSchema = z.object(versioned);

/** An error answer: `detail` (a string, or FastAPI's list for 422) and, for the worker's own errors, a `code`. */
export const ErrorAnswerSchema = z.object({
  detail: z.union([z.string(), z.array(z.object({ loc: z.array(z.unknown()), msg: z.string() }).loose())]),
  code: z.string().optional(),
});

/**
 * One generation request on the wire.
 * @param request - the engine's request
 * @returns `{prompt_token_ids, sampling}`
 */
export function toWireRequest(request: GenerationRequest) {
  const s = request.sampling;
  return {
    prompt_token_ids: request.promptTokenIds,
    sampling: {
      temperature: s.temperature,
      top_p: s.topP,
      top_k: s.topK,
      max_tokens: s.maxTokens,
      stop_token_ids: s.stopTokenIds,
      stop: s.stop,
      ...(s.seed === undefined ? {} : { seed: s.seed }),
    },
  };
}

/**
 * One training row on the wire. Recorded logprobs go through `clampRecordedLogprob` here already (JSON has no NaN;
 * the worker applies the same floor), so a NaN or −∞ never becomes JSON `null`.
 * @param row - the engine's row
 * @returns the row with snake_case names
 */
export function toWireRow(row: TrainRow) {
  return {
    token_ids: row.tokenIds,
    loss_mask: row.lossMask,
    advantages: row.advantages,
    ...(row.oldLogprobs ? { old_logprobs: row.oldLogprobs.map(clampRecordedLogprob) } : {}),
    ...(row.refLogprobs ? { ref_logprobs: row.refLogprobs.map(clampRecordedLogprob) } : {}),
    ...(row.isWeights ? { is_weights: row.isWeights } : {}),
    ...(row.weight === undefined ? {} : { weight: row.weight }),
  };
}

/**
 * The loss config on the wire.
 * @param loss - PPO or SFT
 * @returns snake_case config
 */
export function toWireLoss(loss: LossConfig) {
  if (loss.kind === "sft") return { kind: "sft", aggregation: loss.aggregation };
  return {
    kind: "ppo",
    aggregation: loss.aggregation,
    ...(loss.objective === undefined ? {} : { objective: loss.objective }),
    ...(loss.normalizer === undefined ? {} : { normalizer: loss.normalizer }),
    clip_low: loss.clipLow,
    clip_high: loss.clipHigh,
    ...(loss.dualClip === undefined ? {} : { dual_clip: loss.dualClip }),
    kl_coef: loss.klCoef,
  };
}

/**
 * The optimiser settings on the wire.
 * @param optimizer - learning rate, decay, clip norm, micro-batch rows
 * @returns snake_case settings
 */
export function toWireOptimizer(optimizer: OptimizerConfig) {
  return {
    learning_rate: optimizer.learningRate,
    weight_decay: optimizer.weightDecay,
    max_grad_norm: optimizer.maxGradNorm,
    micro_batch_size: Math.max(1, optimizer.microBatchSize),
  };
}
