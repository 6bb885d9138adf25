/**
 * @module The trainer's configuration: one strict zod schema, every field defaulted and described (units in names or
 * descriptions). The CLI parses YAML, then env, then flags into it once and passes the frozen result down.
 */

import { z } from "zod";
import { MAX_TRAIN_THREADS } from "../engine/embedded/config.js";
import { TorchEngineConfigSchema } from "../engine/remote/config.js";
import { JudgeConfigSchema } from "../judge/config.js";
import { agentFilter, invalidAgentEntry } from "../protocol/agent-match.js";
import { ReasoningParserSchema, ToolParserSchema } from "../protocol/model.js";
import { EnvMapSchema } from "../protocol/rollout.js";
import { parseOrThrow } from "../protocol/validate.js";
import { TrackingConfigSchema } from "../tracking/config.js";

/**
 * Gives a strict object schema a `.default()` equal to parsing `{}` with it, so a missing section gets every inner
 * default (zod 4 returns a plain `.default({})` value as is, without applying the inner defaults).
 */
function section<S extends z.ZodObject>(schema: S, description: string) {
  // `as never`: TypeScript cannot see that a generic object schema's output is never undefined.
  return schema.default(() => schema.parse({}) as never).describe(description);
}

/** Where the task inputs come from. */
export const DataConfigSchema = z.strictObject({
  train_path: z
    .string()
    .min(1)
    .default("data/train.jsonl")
    .describe("JSONL file of training inputs, one JSON object per line (each becomes a group of n rollouts)"),
  val_path: z
    .string()
    .min(1)
    .nullable()
    .default(null)
    .describe("JSONL file of validation inputs; null disables validation"),
});

/** How agents are started (local processes; a Kubernetes template comes later). */
export const AgentLaunchSchema = z
  .strictObject({
    command: z
      .array(z.string())
      .default([])
      .describe("Agent command line (argv) started once per rollout; empty when agent_class is used"),
    agent_class: z
      .string()
      .min(1)
      .nullable()
      .default(null)
      .describe(
        "Agent JS module and export (`path/to/agent.js:Agent`) or Python class (`package.module:Agent`) run instead of command; null: use command",
      ),
    env_map: EnvMapSchema.default({}).describe(
      "Env var name -> dotted path into the rollout input (e.g. {QUESTION: 'input.question'}) for each agent",
    ),
    pool_size: z.number().int().min(1).default(4).describe("Agent processes running at once (local controller)"),
    python: z
      .string()
      .min(1)
      .default("python3")
      .describe("Python interpreter of a Python agent_class, with arclight-agent installed (pip install ./sdk/python)"),
    reuse_processes: z
      .boolean()
      .default(false)
      .describe(
        "Run agent_class agents in long-lived processes, one rollout after another each, instead of one process per rollout (local controller; docs/controller.md)",
      ),
  })
  .refine((c) => c.command.length === 0 || c.agent_class === null, {
    message: "set command or agent_class, not both",
    path: ["agent_class"],
  });

/** How model calls become training rows. */
export const AggregatorConfigSchema = z.strictObject({
  level: z
    .enum(["transition", "trajectory"])
    .default("trajectory")
    .describe("transition: one row per model call; trajectory: merge calls whose prompt extends the row so far"),
  max_prompt_length: z
    .number()
    .int()
    .min(1)
    .default(1024)
    .describe("Maximum prompt length (tokens); rows whose first prompt is longer are dropped"),
  max_response_length: z
    .number()
    .int()
    .min(1)
    .default(1024)
    .describe("Maximum response-region length (tokens); longer rows are truncated"),
});

/** The policy objectives `loss.objective` names (engine `PolicyObjective`). */
export const POLICY_OBJECTIVES = ["ppo", "gspo", "cispo"] as const;

/** How rewards become advantages. */
export const AdvantageConfigSchema = z.strictObject({
  estimator: z
    .enum(["grpo", "dr_grpo", "rloo", "reinforce"], {
      error: (issue) =>
        `unknown advantage estimator ${JSON.stringify(issue.input)}: one of grpo, dr_grpo, rloo, reinforce`,
    })
    .default("grpo")
    .describe(
      "grpo: group mean baseline (÷ std with norm_by_std); dr_grpo: group mean baseline, never ÷ std (Dr. GRPO, " +
        "arXiv:2503.20783; pair it with loss.aggregation token-sum-norm); rloo: leave-one-out baseline; " +
        "reinforce: batch baseline",
    ),
  norm_by_std: z.boolean().default(true).describe("grpo only: divide by the group's standard deviation (+1e-6)"),
  rollout_level: z
    .boolean()
    .default(true)
    .describe("Group statistics over rollouts (each counts once); false: over rows (a rollout counts once per row)"),
  reinforce_baseline: z
    .enum(["batch_mean", "none"])
    .default("batch_mean")
    .describe("reinforce only: subtract the batch mean reward, or nothing"),
});

/** The policy-gradient loss. */
export const LossSectionSchema = z.strictObject({
  objective: z
    .enum(POLICY_OBJECTIVES, {
      error: (issue) => `unknown loss objective ${JSON.stringify(issue.input)}: one of ${POLICY_OBJECTIVES.join(", ")}`,
    })
    .default("ppo")
    .describe(
      "ppo: clipped token ratio (GRPO/DAPO's surrogate); gspo: one clipped ratio per sequence (arXiv:2507.18071); " +
        "cispo: clipped stop-gradient ratio weighting −A·logprob, every token keeps a gradient (arXiv:2506.13585)",
    ),
  aggregation: z
    .enum(["token-mean", "per-rollout-mean", "token-sum-norm"], {
      error: (issue) =>
        `unknown loss aggregation ${JSON.stringify(issue.input)}: one of token-mean, per-rollout-mean, token-sum-norm`,
    })
    .default("per-rollout-mean")
    .describe(
      "token-mean: every masked token weighs the same (DAPO's token-level loss); per-rollout-mean: every rollout " +
        "weighs the same; token-sum-norm: each rollout's token sum ÷ norm_length, mean over rollouts (Dr. GRPO)",
    ),
  norm_length: z
    .number()
    .int()
    .min(1)
    .nullable()
    .default(null)
    .describe("token-sum-norm only: the constant length normaliser (tokens); null: aggregator.max_response_length"),
  clip_low: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .default(null)
    .describe(
      "Lower clip ε_low: ratios below 1 − ε_low are clipped; null: the objective's (ppo 0.2, gspo 3e-4, cispo 1, " +
        "i.e. no lower bound)",
    ),
  clip_high: z
    .number()
    .min(0)
    .nullable()
    .default(null)
    .describe(
      "Upper clip ε_high: ratios above 1 + ε_high are clipped; null: the objective's (ppo 0.28, gspo 4e-4, cispo 0.28)",
    ),
  dual_clip: z
    .number()
    .gt(1)
    .nullable()
    .default(null)
    .describe("ppo only: dual-clip constant c (> 1) bounding the loss of negative advantages; null disables it"),
  kl_coef: z
    .number()
    .min(0)
    .default(0)
    .describe("KL coefficient β against the reference policy; 0 disables the KL term"),
  tis_cap: z
    .number()
    .min(1)
    .default(2)
    .describe(
      "Cap C of truncated importance-sampling weights min(π_old/π_sampler, C) (async, or mismatch.recompute_old_logprobs)",
    ),
});

/** Sampler–trainer mismatch correction (docs/torch-engine.md, "Sampler–trainer mismatch"). */
export const MismatchSectionSchema = z.strictObject({
  recompute_old_logprobs: z
    .boolean()
    .default(false)
    .describe(
      "Sync mode: recompute π_old with the trainer before the update and correct by π_old/π_sampler (async always does)",
    ),
  is_level: z
    .enum(["token", "sequence", "none"])
    .default("token")
    .describe("Truncated IS: token min(r_t, C), sequence min(Π r_t, C) on the whole row, or none; C = loss.tis_cap"),
  mask_level: z
    .enum(["none", "token", "sequence"])
    .default("none")
    .describe("Masked IS: drop tokens (token) or rows (sequence, geometric-mean ratio) whose ratio leaves the band"),
  mask_low: z.number().gt(0).max(1).default(0.5).describe("Lower edge of the masked-IS ratio band"),
  mask_high: z.number().min(1).default(2).describe("Upper edge of the masked-IS ratio band"),
});

/**
 * Clip ranges (ε_low, ε_high) of each objective when `loss.clip_low` / `clip_high` are null: PPO with DAPO's clip-higher
 * (arXiv:2503.14476, §3.1: 0.2 / 0.28), GSPO's sequence-ratio range (arXiv:2507.18071, §5.1: 3e-4 / 4e-4), CISPO with
 * no lower bound on the IS weight, as MiniMax-M1 ran it (arXiv:2506.13585, §3.1), and 0.28 above.
 */
export const OBJECTIVE_CLIPS: Record<(typeof POLICY_OBJECTIVES)[number], { low: number; high: number }> = {
  ppo: { low: 0.2, high: 0.28 },
  gspo: { low: 3e-4, high: 4e-4 },
  cispo: { low: 1, high: 0.28 },
};

/** The optimiser. */
export const OptimizerSectionSchema = z.strictObject({
  learning_rate: z.number().gt(0).default(1e-4).describe("AdamW learning rate"),
  weight_decay: z.number().min(0).default(0.01).describe("AdamW decoupled weight decay"),
  max_grad_norm: z.number().min(0).default(1).describe("Global gradient-norm clip; 0 disables it"),
  micro_batch_size: z.number().int().min(1).default(8).describe("Rows per micro-batch (gradient accumulation)"),
});

/** Credit assignment: how final and per-call rewards become each call's return (credit.ts, docs/credit.md). */
export const CreditConfigSchema = z.strictObject({
  mode: z
    .enum(["broadcast", "per_call", "discounted"])
    .default("broadcast")
    .describe(
      "broadcast: every call gets R + Σ call rewards; per_call: R + the call's own reward; discounted: " +
        "G_t = Σ γ^k r_{t+k} over the rollout's calls, R arriving at the last call",
    ),
  gamma: z.number().min(0).max(1).default(1).describe("Discount γ per call (discounted only)"),
});

/** True when a string compiles as a JavaScript regular expression. */
function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}

const ruleBase = {
  name: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, "letters, digits, '.', '_' or '-' only")
    .optional()
    .describe("Metric name (intermediate/NAME/hits); default: the rule kind"),
  weight: z.number().refine(Number.isFinite).describe("Reward added to the call on each hit (negative: a penalty)"),
};

/**
 * One automatic intermediate reward rule (intermediate-rewards.ts): `tool_status` (a tool span ended with `status`),
 * `invalid_tool_call` (arguments that are not a JSON object, or an unknown tool), `finish_length` (finish_reason
 * `length`), `format` (the response text does (`on: match`) or does not (`on: mismatch`) match `regex` / `json_schema`).
 */
export const IntermediateRuleSchema = z.discriminatedUnion("rule", [
  z.strictObject({
    rule: z.literal("tool_status"),
    status: z.enum(["error", "ok"]).describe("error: span status ERROR; ok: OK or UNSET"),
    ...ruleBase,
  }),
  z.strictObject({ rule: z.literal("invalid_tool_call"), ...ruleBase }),
  z.strictObject({ rule: z.literal("finish_length"), ...ruleBase }),
  z
    .strictObject({
      rule: z.literal("format"),
      regex: z.string().refine(compiles, "not a valid regular expression").optional(),
      json_schema: z.record(z.string(), z.unknown()).optional(),
      on: z.enum(["match", "mismatch"]).default("mismatch").describe("Hit when the text matches, or when it does not"),
      ...ruleBase,
    })
    .refine((r) => (r.regex === undefined) !== (r.json_schema === undefined), {
      message: "set exactly one of regex and json_schema",
    }),
]);
/** One intermediate reward rule, defaults applied. */
export type IntermediateRule = z.output<typeof IntermediateRuleSchema>;

const agentList = (description: string) =>
  z
    .array(z.string().min(1))
    .default([])
    .refine((entries) => invalidAgentEntry(entries) === null, "a /regex/ entry is not a valid regular expression")
    .describe(description);

/** Selective multi-agent training: whose calls train, and which agents stay frozen (docs/credit.md). */
export const AgentsConfigSchema = z.strictObject({
  train: agentList("Agents whose calls become rows (names or /regex/); empty: every agent not frozen"),
  frozen: agentList(
    "Agents never trained (names or /regex/): their calls make no rows, and `arclight train` serves them a " +
      "snapshot of the starting weights under frozen_model",
  ),
  frozen_model: z
    .string()
    .min(1)
    .default("frozen")
    .describe("Model name the frozen snapshot is registered under (the gateway routes frozen agents to it)"),
  policy: z
    .enum(["shared", "per_agent"])
    .default("shared")
    .describe(
      "shared: one policy trains on every trained agent's calls; per_agent: each agent named in `train` gets its " +
        "own policy (torch: a LoRA adapter on one base), trained in the same step on its own rows and served as " +
        "MODEL-AGENT (docs/credit.md §5)",
    ),
});

/**
 * Agent names a per-agent policy can take: they become model names (`MODEL-AGENT`) and LoRA adapter names (torch
 * refuses a dot in a module name).
 */
export const POLICY_AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;

/**
 * Why `agents` cannot give each trained agent a policy, or null when it can: `train` must name the agents one by one
 * (no /regex/: a policy is made per name before any call arrives), none of them frozen (by name or /regex/), none
 * named `base` (the name of the base weights in the torch worker).
 */
export function perAgentProblem(agents: z.output<typeof AgentsConfigSchema>): string | null {
  if (agents.train.length === 0) return "needs agents.train to name each trained agent";
  const bad = agents.train.find((name) => !POLICY_AGENT_NAME.test(name) || name === "base");
  if (bad !== undefined) {
    return `agents.train entry ${JSON.stringify(bad)} cannot name a policy (plain names of letters, digits, _ and -; not /regex/ or "base")`;
  }
  if (new Set(agents.train).size !== agents.train.length) return "agents.train names an agent twice";
  // A frozen /regex/ entry counts too (an invalid one is reported by its own check).
  for (const entry of invalidAgentEntry(agents.frozen) === null ? agents.frozen : []) {
    const trained = agents.train.find((name) => agentFilter([entry])(name));
    if (trained === undefined) continue;
    const via = entry === trained ? "" : ` (${entry})`;
    return `agent ${JSON.stringify(trained)} is both in agents.train and agents.frozen${via}`;
  }
  return null;
}

/** DAPO's dynamic sampling (dynamic-sampling.ts; docs/credit.md §6). */
export const DynamicSamplingConfigSchema = z.strictObject({
  enabled: z
    .boolean()
    .default(false)
    .describe(
      "Drop groups whose rollouts all got one final reward and sample more inputs until train_batch_size groups " +
        "with a spread are in hand (DAPO, arXiv:2503.14476 §3.2); sync only; cost per step in sampling/*",
    ),
  max_extra_rounds: z
    .number()
    .int()
    .min(0)
    .default(3)
    .describe("Extra sampling rounds a step may run; after them it trains on the groups it kept"),
});

/** DAPO's overlong reward shaping (overlong.ts; docs/credit.md §6). */
export const OverlongShapingConfigSchema = z
  .strictObject({
    max_length: z
      .number()
      .int()
      .min(2)
      .nullable()
      .default(null)
      .describe(
        "L_max (tokens a rollout generates, all its calls): past it the full penalty; null disables the shaping " +
          "(DAPO, arXiv:2503.14476 §3.4)",
      ),
    buffer: z
      .number()
      .int()
      .min(1)
      .default(64)
      .describe("L_cache (tokens): the penalty grows linearly from 0 at L_max − L_cache to −factor at L_max"),
    factor: z.number().min(0).default(1).describe("Scale of the penalty added to the final reward (1: down to −1)"),
  })
  .refine((o) => o.max_length === null || o.buffer < o.max_length, {
    message: "buffer must be smaller than max_length",
    path: ["buffer"],
  });

/** Collocated asynchronous training. */
export const AsyncConfigSchema = z.strictObject({
  enabled: z.boolean().default(false).describe("Keep rollouts running while the policy trains"),
  async_train_batch_size: z
    .number()
    .int()
    .min(1)
    .default(16)
    .describe(
      "Most groups kept in flight (must exceed train_batch_size when enabled); the staleness budget caps it at (max_staleness + 1) × train_batch_size",
    ),
  max_staleness: z
    .number()
    .int()
    .min(0)
    .default(1)
    .describe(
      "Policy versions a trained rollout may lag behind the current policy (versions); groups are launched only while each can train within it (at least 1 when enabled)",
    ),
});

/** A thread count of the embedded engine: an integer from 1 to {@link MAX_TRAIN_THREADS}, default 1. */
const threadCount = (description: string) =>
  z.number().int().min(1).max(MAX_TRAIN_THREADS).default(1).describe(description);

/**
 * How arclight starts vLLM itself (`engine.vllm.launch`): `COMMAND serve MODEL` with the flags the run's mode needs,
 * one process per replica (docs/torch-engine.md, "Managed vLLM").
 */
export const VllmLaunchSchema = z.strictObject({
  command: z.string().min(1).default("vllm").describe("The vLLM executable (a name on PATH or a path)"),
  model: z
    .string()
    .min(1)
    .nullable()
    .default(null)
    .describe("What `vllm serve` loads (a local folder or a Hugging Face id); null: engine.model"),
  args: z
    .array(z.string())
    .default([])
    .describe("More `vllm serve` arguments, appended, e.g. [--gpu-memory-utilization, '0.4']"),
  gpus: z
    .array(z.string().regex(/^\d+(,\d+)*$/, "GPU indices separated by commas, e.g. '0' or '0,1'"))
    .default([])
    .describe("CUDA_VISIBLE_DEVICES of each replica, one entry per replica (e.g. ['0', '1']); empty: inherited"),
  host: z.string().min(1).default("127.0.0.1").describe("Interface every replica listens on"),
  port: z
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(0)
    .describe("Port of the first replica; replica i listens on port + i; 0: a free port each"),
  env: z.record(z.string(), z.string()).default({}).describe("More environment of every replica"),
  max_logprobs: z.number().int().min(0).default(20).describe("vLLM's --max-logprobs (top logprobs a call may ask)"),
  health_timeout_seconds: z
    .number()
    .gt(0)
    .default(900)
    .describe("How long a replica may take to answer GET /health 200 after it starts (s); model loading counts"),
  max_restarts: z
    .number()
    .int()
    .min(0)
    .default(3)
    .describe("Restarts of a replica that exits on its own before the run stops with an error"),
  restart_backoff_seconds: z
    .number()
    .min(0)
    .default(2)
    .describe("Wait before the first restart of a replica (s); doubles with each further restart"),
});
/** The launch settings of a managed vLLM, defaults applied. */
export type VllmLaunch = z.output<typeof VllmLaunchSchema>;

/** vLLM started by arclight (`launch` set) instead of servers the user runs (`vllm_endpoints`). */
export const VllmSectionSchema = z
  .strictObject({
    launch: VllmLaunchSchema.nullable()
      .default(null)
      .describe("sampler vllm: start vLLM with these settings (launch: {} takes every default); null: vllm_endpoints"),
    replicas: z.number().int().min(1).default(1).describe("sampler vllm with launch: vLLM processes to start"),
  })
  .refine((v) => v.launch === null || v.launch.gpus.length === 0 || v.launch.gpus.length === v.replicas, {
    message: "launch.gpus needs one entry per replica (or none)",
    path: ["launch", "gpus"],
  });

/**
 * Which engine trains and serves the policy: the embedded CPU engine (the default; its model comes from `--preset`)
 * or the torch engine (a Python worker; docs/torch-engine.md), with the torch settings beside `kind` and `model`.
 */
export const EngineSectionSchema = TorchEngineConfigSchema.extend({
  kind: z
    .enum(["embedded", "torch"])
    .default("embedded")
    .describe("embedded: tfjs in this process; torch: PyTorch + transformers in a Python worker"),
  model: z
    .string()
    .min(1)
    .nullable()
    .default(null)
    .describe("torch: a local Hugging Face model folder or new:NAME (qwen2-tiny, qwen2-0.5b); null: new:qwen2-tiny"),
  seed: z.number().int().default(0).describe("torch: weight-init seed of new:NAME models"),
  train_threads: threadCount(
    "embedded: threads per training step, 1–64 (the step's rows split across gradient worker threads, at most " +
      "one share per row; worth it when the cores are idle during updates, e.g. a synchronous trainer; " +
      "docs/engine.md); torch: must stay 1",
  ),
  decode_threads: threadCount(
    "embedded: threads that decode, 1–64 (each generate call goes to the decode loop, this thread's or a decode " +
      "worker thread's, with the fewest sequences; worth it when many agents sample at once and cores are idle; " +
      "each worker adds a copy of the model's memory; docs/engine.md); torch: must stay 1",
  ),
  sampler: z
    .enum(["engine", "vllm"])
    .default("engine")
    .describe(
      "Who answers the rollouts' model calls: engine (the trained engine, served here) or vllm (vllm_endpoints, or " +
        "the replicas of vllm.launch, given each new LoRA adapter or full weights at runtime; torch only)",
    ),
  vllm_endpoints: z
    .array(z.url({ protocol: /^https?$/ }))
    .default([])
    .describe("sampler vllm: base URLs of the vLLM servers, ending in /v1 (e.g. http://127.0.0.1:8000/v1)"),
  vllm_sleep: z
    .boolean()
    .default(false)
    .describe("sampler vllm: collocated on the trainer's GPU: put vLLM to sleep (level 1) around each update"),
  vllm: section(VllmSectionSchema, "sampler vllm: vLLM processes arclight starts and watches"),
});

/**
 * How the gateway's proxy serves the policy's chat calls: `passthrough` (the agent's messages go upstream as they
 * are), or `tito` (token in, token out: each prompt is built from the attempt's recorded token ids plus only the new
 * messages, rendered with the model's own chat template, so a multi-turn rollout stays one trajectory; docs/tito.md).
 * The trainer registers its endpoints with these settings at every policy version.
 */
export const ProxyConfigSchema = z.strictObject({
  mode: z
    .enum(["passthrough", "tito"])
    .default("passthrough")
    .describe(
      "passthrough: the agent's chat body goes upstream; tito: token-id prompts from recorded ids (docs/tito.md)",
    ),
  tokenizer: z
    .string()
    .min(1)
    .nullable()
    .default(null)
    .describe("tito: folder with tokenizer.json + tokenizer_config.json; null: engine.model when it is a local folder"),
  tool_parser: ToolParserSchema.default("hermes").describe(
    "tito: how tool calls are read from generated text: a vLLM --tool-call-parser name (hermes: JSON in tool_call " +
      "tags, as Qwen writes them; llama3_json, qwen3_coder, mistral, deepseek_v3, pythonic) or none",
  ),
  reasoning_parser: ReasoningParserSchema.default("none").describe(
    "tito: how a reasoning model's <think>…</think> text is split off the answer into message.reasoning: a vLLM " +
      "--reasoning-parser name (deepseek_r1, qwen3) or none (the text stays in content); the token record keeps every id",
  ),
});

/** The whole trainer configuration. */
export const TrainerConfigSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/, "letters, digits, '.', '_' or '-' only")
      .default("arclight")
      .describe("Run name; metrics and checkpoints go to runs/NAME/"),
    data: section(DataConfigSchema, "Task inputs"),
    train_batch_size: z.number().int().min(1).default(8).describe("Groups per training step"),
    n: z.number().int().min(1).default(4).describe("Rollouts per group (group size), all on the same input"),
    rollout_timeout_seconds: z.number().gt(0).default(600).describe("A rollout still running after this is failed (s)"),
    controller: section(AgentLaunchSchema, "How agents are started"),
    aggregator: section(AggregatorConfigSchema, "How model calls become training rows"),
    advantage: section(AdvantageConfigSchema, "How rewards become advantages"),
    loss: section(LossSectionSchema, "Policy-gradient loss"),
    mismatch: section(MismatchSectionSchema, "Sampler–trainer mismatch correction"),
    optimizer: section(OptimizerSectionSchema, "Optimiser"),
    total_steps: z
      .number()
      .int()
      .min(1)
      .nullable()
      .default(null)
      .describe("Training steps to run; null: run `epochs` passes over the train data"),
    epochs: z.number().int().min(1).default(1).describe("Passes over the train data when total_steps is null"),
    max_ppo_update_times: z
      .number()
      .int()
      .min(1)
      .default(1)
      .describe("PPO epochs: passes over the step's batch, one optimiser update per mini-batch (ppo_mini_batch_size)"),
    ppo_mini_batch_size: z
      .number()
      .int()
      .min(1)
      .nullable()
      .default(null)
      .describe(
        "Groups per optimiser update: each PPO epoch splits the step's groups into mini-batches of this many, one " +
          "update each (verl's actor.ppo_mini_batch_size); null: the whole batch in one update",
      ),
    pass_threshold: z
      .number()
      .refine(Number.isFinite, "expected a finite number")
      .default(1)
      .describe(
        "Reward at or above which a completed rollout passes (`arclight eval`'s pass@k; --threshold overrides)",
      ),
    reward_fillna_value: z
      .number()
      .default(0)
      .describe("Final reward of a rollout that posted none (counted as reward_filled)"),
    reward_policy: z
      .enum(["last", "sum", "per_call"])
      .default("last")
      .describe(
        "Several reward events: last: the last one is the final reward; sum: they add up; per_call: events with " +
          "a call_id reward that call, the last one without is the final reward",
      ),
    credit: section(CreditConfigSchema, "Credit assignment over a rollout's calls"),
    intermediate_rewards: z
      .array(IntermediateRuleSchema)
      .default([])
      .refine((rules) => new Set(rules.map((r) => r.name ?? r.rule)).size === rules.length, {
        message: "rule names must be unique (set name on repeated kinds)",
      })
      .describe("Automatic per-call rewards from spans and calls (rules with weights)"),
    agents: section(AgentsConfigSchema, "Which agents train and which stay frozen"),
    judge: section(JudgeConfigSchema, "LLM judge reward over an OpenAI-compatible endpoint"),
    missing_logprobs: z
      .enum(["recompute", "drop"])
      .default("recompute")
      .describe(
        "Rows lacking sampling-time logprobs on some trained token: recompute them with the engine before the " +
          "update (the weights that sampled them, in sync mode), or drop the rows; counted per step either way",
      ),
    failed_rollouts: z
      .enum(["drop", "fillna"])
      .default("drop")
      .describe(
        "A failed rollout (agent crash, timeout): drop it from its group, or train it with reward_fillna_value",
      ),
    pause_retry_after_seconds: z
      .number()
      .int()
      .min(0)
      .default(1)
      .describe("Retry-After (s) the paused proxy tells agents during a weight update"),
    pause_lease_seconds: z
      .number()
      .gt(0)
      .default(60)
      .describe(
        "Lease (s) of the trainer's proxy pause, renewed every third of it while the update runs: a trainer that " +
          "dies mid-update leaves the gateway paused at most this long",
      ),
    dynamic_sampling: section(DynamicSamplingConfigSchema, "DAPO dynamic sampling: groups with a reward spread only"),
    overlong_shaping: section(OverlongShapingConfigSchema, "DAPO overlong reward shaping by response length"),
    async: section(AsyncConfigSchema, "Collocated asynchronous training"),
    engine: section(EngineSectionSchema, "Which engine trains and serves the policy"),
    proxy: section(ProxyConfigSchema, "How the gateway's proxy serves the policy's chat calls"),
    checkpoint_interval: z
      .number()
      .int()
      .min(0)
      .default(10)
      .describe("Save a checkpoint every this many steps; 0: never"),
    val_interval: z.number().int().min(0).default(10).describe("Validate every this many steps; 0: never"),
    seed: z.number().int().default(0).describe("Seed of the data order and sampling"),
    tracking: TrackingConfigSchema,
  })
  .superRefine((config, ctx) => {
    // In flight must exceed what one step consumes, or async degenerates to sync with extra waiting.
    if (config.async.enabled && config.async.async_train_batch_size <= config.train_batch_size) {
      ctx.addIssue({
        code: "custom",
        path: ["async", "async_train_batch_size"],
        message: `must exceed train_batch_size (${config.train_batch_size}) when async is enabled`,
      });
    }
    // The budget admits (max_staleness + 1) · train_batch_size groups in flight: with 0, one step's worth, i.e. sync.
    if (config.async.enabled && config.async.max_staleness === 0) {
      ctx.addIssue({
        code: "custom",
        path: ["async", "max_staleness"],
        message: "must be at least 1 when async is enabled (0 admits only train_batch_size groups in flight: sync)",
      });
    }
    if (config.dynamic_sampling.enabled && config.async.enabled) {
      ctx.addIssue({
        code: "custom",
        path: ["dynamic_sampling", "enabled"],
        message: "dynamic sampling runs in sync mode only (async.enabled is true)",
      });
    }
    if (config.loss.dual_clip !== null && config.loss.objective !== "ppo") {
      ctx.addIssue({
        code: "custom",
        path: ["loss", "dual_clip"],
        message: `dual_clip applies to objective ppo only, not ${config.loss.objective}`,
      });
    }
    const perAgent = config.agents.policy === "per_agent" ? perAgentProblem(config.agents) : null;
    if (perAgent !== null) {
      ctx.addIssue({ code: "custom", path: ["agents", "policy"], message: `per_agent ${perAgent}` });
    }
    if (config.agents.policy === "per_agent" && config.engine.kind === "torch" && config.engine.lora === null) {
      ctx.addIssue({
        code: "custom",
        path: ["agents", "policy"],
        message: "per_agent on the torch engine needs engine.lora (one base model, a LoRA adapter per agent)",
      });
    }
    if (config.proxy.mode === "tito" && titoTokenizerOf(config) === null) {
      ctx.addIssue({
        code: "custom",
        path: ["proxy", "tokenizer"],
        message:
          "proxy.mode tito needs a Hugging Face tokenizer folder (tokenizer.json + tokenizer_config.json): set " +
          "proxy.tokenizer, or use engine.kind torch with engine.model a local model folder",
      });
    }
  });

/**
 * The tokenizer folder `tito` registers the policy with: `proxy.tokenizer`, else a torch engine's local model folder
 * (`engine.model` not `new:NAME`); null when there is none.
 * @param config - the trainer configuration (or the parts of it this reads)
 */
export function titoTokenizerOf(config: {
  proxy: { tokenizer: string | null };
  engine: { kind: string; model: string | null };
}): string | null {
  if (config.proxy.tokenizer !== null) return config.proxy.tokenizer;
  const { kind, model } = config.engine;
  return kind === "torch" && model !== null && !model.startsWith("new:") ? model : null;
}

/** The trainer configuration, defaults applied. */
export type TrainerConfig = z.output<typeof TrainerConfigSchema>;
/** The trainer configuration as a user writes it (every field optional). */
export type TrainerConfigInput = z.input<typeof TrainerConfigSchema>;

/**
 * Parses a trainer configuration (e.g. a YAML document already loaded), applying every default, and freezes it.
 * @param value - untrusted config object
 * @returns the frozen configuration
 * @throws {ValidationFailed} naming every bad key, e.g. `trainer config: loss.clip_low: Too big: expected number to be <=1`
 */
export function parseTrainerConfig(value: unknown): Readonly<TrainerConfig> {
  return Object.freeze(parseOrThrow(TrainerConfigSchema, value, "trainer config"));
}
