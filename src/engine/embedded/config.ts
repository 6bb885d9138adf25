/**
 * @module Model configuration of the embedded GPT and its named presets. Keys are snake_case because this object is
 * written verbatim as a checkpoint's `config.json`.
 */
import { z } from "zod";

/** Shape of the decoder-only transformer; `d_model` must divide by `n_heads`. */
export const ModelConfigSchema = z
  .object({
    /** Vocabulary size (token ids). */
    vocab: z.number().int().positive(),
    /** Width of the residual stream (channels, C). */
    d_model: z.number().int().positive(),
    /** Transformer blocks. */
    n_layers: z.number().int().positive(),
    /** Attention heads (H); head width is d_model / n_heads. */
    n_heads: z.number().int().positive(),
    /**
     * Maximum sequence length (tokens), i.e. rows of the learned position table; at least 2 (a prompt token and one
     * predicted token).
     */
    context: z.number().int().min(2),
  })
  .strict()
  .refine((c) => c.d_model % c.n_heads === 0, { message: "d_model must be a multiple of n_heads" });

/** Shape of the decoder-only transformer. */
export type ModelConfig = z.infer<typeof ModelConfigSchema>;

/**
 * Named model shapes: `tiny` is the demo/CI model, `bench` the 0.84M-param shape the speed targets refer to, `agent`
 * the default of `arclight engine serve`, whose 4096-token context fits framework agents' first prompts (with the
 * byte tokenizer one token per byte; tool schemas with `$schema`, `additionalProperties` and `strict` make those 1.5-4
 * kB), and `small` a wider model.
 */
export const MODEL_PRESETS = {
  tiny: { vocab: 261, d_model: 128, n_layers: 4, n_heads: 4, context: 256 },
  agent: { vocab: 261, d_model: 128, n_layers: 4, n_heads: 4, context: 4096 },
  bench: { vocab: 261, d_model: 128, n_layers: 4, n_heads: 4, context: 128 },
  small: { vocab: 261, d_model: 256, n_layers: 6, n_heads: 8, context: 512 },
} as const satisfies Record<string, ModelConfig>;

/** Name of a preset in {@link MODEL_PRESETS}. */
export type ModelPreset = keyof typeof MODEL_PRESETS;

/**
 * Validates a model config.
 * @param value - parsed JSON or a literal config
 * @returns the config
 * @throws {z.ZodError} when a field is missing, not a positive integer (context: below 2), or d_model % n_heads != 0
 */
export function parseModelConfig(value: unknown): ModelConfig {
  return ModelConfigSchema.parse(value);
}

/**
 * The most threads one training step may use (`EmbeddedEngineOptions.trainThreads`, `engine.train_threads`,
 * `arclight demo --train-threads`; see `parallel-train.ts`).
 */
export const MAX_TRAIN_THREADS = 64;
