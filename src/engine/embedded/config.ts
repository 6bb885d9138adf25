/** @module The embedded GPT's config and presets; snake_case because it is written verbatim as `config.json`. */
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
    /** Maximum sequence length (tokens), the rows of the position table; at least 2. */
    context: z.number().int().min(2),
  })
  .strict()
  .refine((c) => c.d_model % c.n_heads === 0, { message: "d_model must be a multiple of n_heads" });

/** Shape of the decoder-only transformer. */
export type ModelConfig = z.infer<typeof ModelConfigSchema>;

/**
 * Named shapes: `tiny` for demo/CI, `bench` the shape the speed targets refer to, `agent` (4096-token context: agents'
 * first prompts with tool schemas are 1.5–4 kB of bytes) the `engine serve` default, `small` a wider model.
 */
export const MODEL_PRESETS = {
  tiny: { vocab: 261, d_model: 128, n_layers: 4, n_heads: 4, context: 256 },
  agent: { vocab: 261, d_model: 128, n_layers: 4, n_heads: 4, context: 4096 },
  bench: { vocab: 261, d_model: 128, n_layers: 4, n_heads: 4, context: 128 },
  small: { vocab: 261, d_model: 256, n_layers: 6, n_heads: 8, context: 512 },
} as const satisfies Record<string, ModelConfig>;

/** Name of a preset in {@link MODEL_PRESETS}. */
export type ModelPreset = keyof typeof MODEL_PRESETS;

/** Validates a model config. @throws {z.ZodError} on a non-positive field, context < 2, or d_model % n_heads ≠ 0 */
export function parseModelConfig(value: unknown): ModelConfig {
  return ModelConfigSchema.parse(value);
}

/** The most threads one training step may use (`parallel-train.ts`). */
export const MAX_TRAIN_THREADS = 64;
