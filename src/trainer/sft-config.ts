/**
 * @module The configuration of `arclight sft`: where the recorded rollouts come from, which of them to keep, how
 * they become rows (the trainer's aggregator section), the SFT steps, the engine, and the optional reward validation.
 * One strict zod schema, every field defaulted and described.
 */
import { z } from "zod";
import { parseOrThrow } from "../protocol/validate.js";
import { TrackingConfigSchema } from "../tracking/config.js";
import { AgentLaunchSchema, AggregatorConfigSchema, EngineSectionSchema } from "./config.js";

/** Gives a strict object schema a `.default()` equal to parsing `{}` with it (see trainer/config.ts). */
function section<S extends z.ZodType>(schema: S, description: string) {
  return schema.default(() => schema.parse({}) as never).describe(description);
}

/** Where the recorded rollouts are read from. */
export const SftSourceSchema = z.strictObject({
  gateway_url: z
    .string()
    .min(1)
    .nullable()
    .default(null)
    .describe("A running gateway holding the rollouts (its key: --key, ARCLIGHT_KEY or AGL_KEY); null: use db_path"),
  db_path: z
    .string()
    .min(1)
    .nullable()
    .default(null)
    .describe("A gateway SQLite file of an earlier run (e.g. runs/NAME/gateway.db), opened by a gateway child"),
});

/** Which recorded rollouts become SFT rows. Only `succeeded` rollouts are considered. */
export const SftSelectSchema = z.strictObject({
  id_prefix: z
    .string()
    .min(1)
    .nullable()
    .default(null)
    .describe("Keep rollouts whose id starts with this (a run: the trainer names rollouts NAME-…); null: any"),
  metadata: z
    .record(z.string(), z.union([z.string(), z.number(), z.boolean()]))
    .default({})
    .describe("Keep rollouts whose metadata has every one of these key: value pairs (a tag); {}: any"),
  data_ids: z
    .array(z.string())
    .nullable()
    .default(null)
    .describe("Keep rollouts whose input data_id (else instance_id) is one of these; null: any"),
  is_train: z
    .boolean()
    .nullable()
    .default(null)
    .describe("Keep only train (true) or validation (false) rollouts; null: both"),
  min_reward: z
    .number()
    .nullable()
    .default(null)
    .describe("Keep rollouts whose final reward is at least this; null: any reward"),
  best_of_n: z
    .boolean()
    .default(false)
    .describe("Rejection sampling: keep only the highest-reward rollout of each data id (first one on a tie)"),
});

/** The SFT steps. */
export const SftStepsSchema = z.strictObject({
  steps: z.number().int().min(1).default(100).describe("Optimiser steps"),
  batch_size: z.number().int().min(1).default(8).describe("Rows per step, drawn from a seeded shuffle (rows)"),
  learning_rate: z.number().gt(0).default(1e-3).describe("AdamW learning rate"),
  lr_decay_steps: z
    .number()
    .int()
    .min(0)
    .default(0)
    .describe(
      "Lower the learning rate linearly over the last N steps: the k-th from last runs at learning_rate·k/N " +
        "(0: constant; N above steps: from the first step)",
    ),
  weight_decay: z.number().min(0).default(0).describe("AdamW decoupled weight decay"),
  max_grad_norm: z.number().min(0).default(1).describe("Global gradient-norm clip; 0 disables it"),
  micro_batch_size: z.number().int().min(1).default(16).describe("Rows per micro-batch (gradient accumulation)"),
  val_fraction: z
    .number()
    .min(0)
    .max(0.5)
    .default(0.1)
    .describe("Share of the selected rows held out to measure the loss before and after (0: none)"),
  log_interval: z.number().int().min(1).default(10).describe("Write a metrics.jsonl line every this many steps"),
});

/** Reward validation before and after SFT: real rollouts of the agent against the served policy. */
export const SftValidationSchema = z.strictObject({
  data_path: z
    .string()
    .min(1)
    .nullable()
    .default(null)
    .describe("JSONL file of validation inputs, run once each before and after SFT (greedy); null: no rollouts"),
  controller: section(AgentLaunchSchema, "How the validation agents are started (as in the trainer config)"),
  rollout_timeout_seconds: z
    .number()
    .gt(0)
    .default(600)
    .describe("A validation rollout still running after this fails (s)"),
});

/** The whole `arclight sft` configuration. */
export const SftConfigSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/, "letters, digits, '.', '_' or '-' only")
      .default("sft")
      .describe("Run name; metrics.jsonl and the checkpoint go to runs/NAME/"),
    source: section(SftSourceSchema, "Where the recorded rollouts are read from"),
    select: section(SftSelectSchema, "Which rollouts become SFT rows"),
    aggregator: section(AggregatorConfigSchema, "How model calls become rows (as in the trainer config)"),
    sft: section(SftStepsSchema, "The SFT steps"),
    engine: section(
      EngineSectionSchema.omit({ sampler: true, vllm_endpoints: true, vllm_sleep: true, vllm: true }),
      "Which engine is fine-tuned (as in the trainer config, without the sampler keys)",
    ),
    validation: section(SftValidationSchema, "Reward validation before and after SFT"),
    reward_fillna_value: z.number().default(0).describe("Reward of a rollout that posted none"),
    seed: z.number().int().default(0).describe("Seed of the row order and the held-out split"),
    tracking: TrackingConfigSchema,
  })
  .superRefine((config, ctx) => {
    if ((config.source.gateway_url === null) === (config.source.db_path === null)) {
      ctx.addIssue({
        code: "custom",
        path: ["source"],
        message: "set exactly one of gateway_url and db_path (or give --gateway-url or --db)",
      });
    }
  });

/** The `arclight sft` configuration, defaults applied. */
export type SftConfig = z.output<typeof SftConfigSchema>;

/**
 * Parses an `arclight sft` configuration (e.g. a YAML document already loaded), applying every default, and freezes it.
 * @param value - untrusted config object
 * @returns the frozen configuration
 * @throws {ValidationFailed} naming every bad key, e.g. `sft config: source: set exactly one of gateway_url and db_path`
 */
export function parseSftConfig(value: unknown): Readonly<SftConfig> {
  return Object.freeze(parseOrThrow(SftConfigSchema, value, "sft config"));
}
