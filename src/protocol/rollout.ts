/** @module Rollout wire types, field names exactly as Agent Lightning v1.0's HTTP API. */
import { z } from "zod";
import { wellFormedString } from "./text.js";

/** Rollout states. `succeeded` and `failed` are terminal. */
export const RolloutStateSchema = z.enum(["queuing", "running", "succeeded", "failed"]);
/** One of `queuing | running | succeeded | failed`. */
export type RolloutState = z.infer<typeof RolloutStateSchema>;

/** Environment variable names `env_map` may set: a letter or `_`, then letters, digits and `_` (POSIX portable). */
export const ENV_VAR_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `env_map`: env var name → dotted path into the rollout; every name must match {@link ENV_VAR_NAME_PATTERN}. */
export const EnvMapSchema = z.record(z.string(), z.string()).superRefine((envMap, ctx) => {
  for (const name of Object.keys(envMap)) {
    if (ENV_VAR_NAME_PATTERN.test(name)) continue;
    const message = `env_map key ${JSON.stringify(name)} is not an env var name ([A-Za-z_][A-Za-z0-9_]*)`;
    ctx.addIssue({ code: "custom", message, path: [name] });
  }
});

/** How a local controller runs the agent: an argv, or a JS/Python entry point (AGL `agent_class`), never both. */
export const LocalConfigSchema = z
  .strictObject({
    command: z.array(z.string()).min(1).optional().describe("argv of the agent process, e.g. ['python3', 'agent.py']"),
    agent_class: z
      .string()
      .min(1)
      .optional()
      .describe("JS module and export, 'path/to/module.js:ExportName', or a Python class, 'package.module:ClassName'"),
    env_map: EnvMapSchema.default({}).describe(
      "env var name -> dotted path into the rollout input, e.g. {QUESTION: 'input.question'}",
    ),
  })
  .refine((local) => local.command === undefined || local.agent_class === undefined, {
    message: "set command or agent_class, not both",
    path: ["agent_class"],
  });
/** Local execution settings of a rollout. */
export type LocalConfig = z.infer<typeof LocalConfigSchema>;

/** How a Kubernetes controller runs the agent (a Job template, rendered per rollout). */
export const K8sConfigSchema = z.strictObject({
  job_template: z.string().min(1).describe("Job manifest template (YAML)"),
});
/** Kubernetes execution settings of a rollout. */
export type K8sConfig = z.infer<typeof K8sConfigSchema>;

/** Execution settings of a rollout. */
export const RolloutConfigSchema = z.strictObject({
  timeout_seconds: z.number().positive().default(3600).describe("wall time (s) before an attempt is killed"),
  max_attempts: z.number().int().min(1).default(1).describe("attempts before the rollout fails"),
  // null when unset, as Agent Lightning v1.0 answers.
  local: LocalConfigSchema.nullable().default(null),
  k8s: K8sConfigSchema.nullable().default(null),
});
/** Execution settings of a rollout, defaults applied. */
export type RolloutConfig = z.infer<typeof RolloutConfigSchema>;

/** Free-form metadata; `batch_idx` and `sample_idx_in_batch` are null when unset, as AGL v1.0 answers. */
export const RolloutMetadataSchema = z.looseObject({
  batch_idx: z.number().int().nullable().default(null),
  sample_idx_in_batch: z.number().int().nullable().default(null),
});
/** Rollout metadata. */
export type RolloutMetadata = z.infer<typeof RolloutMetadataSchema>;

/** Status block of a rollout. Times are epoch seconds (float). `version` starts at 1 and grows by 1 per patch. */
export const RolloutStatusSchema = z.strictObject({
  state: RolloutStateSchema,
  k8s_job_name: z.string().nullable().default(null),
  last_attempt_id: z.string().nullable().default(null),
  error_message: z.string().nullable().default(null),
  version: z.number().int().min(1),
  created_at: z.number(),
  updated_at: z.number(),
});
/** Rollout status. */
export type RolloutStatus = z.infer<typeof RolloutStatusSchema>;

/** A stored rollout. `input` is any JSON value the agent receives. */
export const RolloutSchema = z.strictObject({
  rollout_id: z.string().min(1),
  input: z.unknown(),
  is_train: z.boolean(),
  config: RolloutConfigSchema,
  metadata: RolloutMetadataSchema,
  status: RolloutStatusSchema,
});
/** A stored rollout. */
export type Rollout = z.infer<typeof RolloutSchema>;

/** The most characters a rollout id may have (ids appear in URL paths). */
export const MAX_ROLLOUT_ID_LENGTH = 200;

/** Rollout ids: non-empty, at most {@link MAX_ROLLOUT_ID_LENGTH} letters, digits, `.`, `_`, `-`, `:`. */
export const RolloutIdSchema = z
  .string()
  .min(1)
  .max(MAX_ROLLOUT_ID_LENGTH)
  .regex(/^[A-Za-z0-9._:-]+$/, "rollout_id may hold only letters, digits, '.', '_', '-', ':'");

/** Body item of `POST /api/rollouts`. A caller-supplied `rollout_id` makes creation idempotent. */
export const RolloutCreateSchema = z.strictObject({
  input: z.unknown().refine((v) => v !== undefined, "input is required"),
  is_train: z.boolean().default(true),
  config: RolloutConfigSchema.default(() => RolloutConfigSchema.parse({})),
  metadata: RolloutMetadataSchema.prefault({}),
  rollout_id: RolloutIdSchema.optional(),
});
/** A rollout to create, defaults applied. */
export type RolloutCreate = z.infer<typeof RolloutCreateSchema>;
/** A rollout to create, as a caller writes it (defaults not yet applied). */
export type RolloutCreateInput = z.input<typeof RolloutCreateSchema>;

/** Body of `PATCH /api/rollouts/{id}`: only `status.*` fields may change; unknown fields are rejected. */
export const RolloutPatchSchema = z.strictObject({
  status: z
    .strictObject({
      state: RolloutStateSchema.optional(),
      k8s_job_name: wellFormedString().nullable().optional(),
      last_attempt_id: wellFormedString(1).nullable().optional(),
      error_message: wellFormedString().nullable().optional(),
    })
    .optional(),
});
/** A status patch. */
export type RolloutPatch = z.infer<typeof RolloutPatchSchema>;

/** One row of `GET /api/rollouts/terminal`. `data_id` is `input.data_id`, else `input.instance_id`, else "". */
export const TerminalEntrySchema = z.strictObject({
  rollout_id: z.string(),
  state: RolloutStateSchema,
  data_id: z.string(),
  is_train: z.boolean(),
});
/** One rollout that reached a terminal state. */
export type TerminalEntry = z.infer<typeof TerminalEntrySchema>;

/** Page of the terminal cursor: `next_after` is the cursor to pass as `after` next time. */
export interface TerminalPage {
  items: TerminalEntry[];
  next_after: number;
  total_terminal: number;
}

/** The grouping key of an input: `data_id`, else `instance_id`, else "" (AGL v1.0 rule). */
export function dataIdOf(input: unknown): string {
  if (input !== null && typeof input === "object" && !Array.isArray(input)) {
    const record = input as Record<string, unknown>;
    for (const key of ["data_id", "instance_id"]) {
      const value = record[key];
      if (typeof value === "string") return value;
      if (typeof value === "number") return String(value);
    }
  }
  return "";
}

/** A stored config with `local` and `k8s` filled as null where older rows lack them. */
export function withConfigDefaults(config: Rollout["config"]): Rollout["config"] {
  return { ...config, local: config.local ?? null, k8s: config.k8s ?? null };
}

/** Metadata with `batch_idx` and `sample_idx_in_batch` present (null when unset). */
export function withMetadataDefaults(metadata: Partial<Rollout["metadata"]>): Rollout["metadata"] {
  return {
    ...metadata,
    batch_idx: metadata.batch_idx ?? null,
    sample_idx_in_batch: metadata.sample_idx_in_batch ?? null,
  };
}
