/** @module The `arclight apo` configuration: one strict zod schema, every field defaulted and described. */
import { z } from "zod";
import { ResourceNameSchema } from "../protocol/resource.js";
import { parseOrThrow } from "../protocol/validate.js";
import { TrackingConfigSchema } from "../tracking/config.js";
import { AgentLaunchSchema } from "../trainer/config.js";

/** Gives a strict object schema a `.default()` equal to parsing `{}` with it (see trainer/config.ts). */
function section<S extends z.ZodType>(schema: S, description: string) {
  return schema.default(() => schema.parse({}) as never).describe(description);
}

const nullableText = (description: string) => z.string().min(1).nullable().default(null).describe(description);
const httpUrl = () => z.url({ protocol: /^https?$/ });

/** The prompt being optimised: a versioned gateway resource, and how the controller hands it to each agent. */
export const ApoPromptSchema = z.strictObject({
  resource: ResourceNameSchema.default("prompt").describe("Name of the resource that holds the prompt"),
  env: nullableText("Env var the agent reads the prompt from (controller resources_env), e.g. CALC_SYSTEM_PROMPT"),
  file_env: nullableText("Env var holding the path of a file with the prompt (controller resources_file_env)"),
  initial: nullableText("The starting prompt, stored as a new version; null: the resource's latest version"),
});

/** The task inputs. */
export const ApoDataSchema = z.strictObject({
  train_path: nullableText("JSONL inputs the minibatches (critique traces) are drawn from (required)"),
  val_path: nullableText("JSONL inputs every candidate prompt is scored on (required)"),
  val_size: z
    .number()
    .int()
    .min(1)
    .nullable()
    .default(null)
    .describe("Score on the first N validation inputs only; null: all of them"),
});

/** The policy model the agents call through the gateway. */
export const ApoPolicySchema = z.strictObject({
  endpoint: httpUrl()
    .nullable()
    .default(null)
    .describe(
      "OpenAI-compatible base URL of the policy (vLLM, `arclight engine`, …), registered as the gateway's model (required)",
    ),
  model: z.string().min(1).default("policy").describe("Model name the gateway serves it under"),
});

/** The optimiser LLM: any OpenAI-compatible chat-completions endpoint, configured apart from the policy. */
export const ApoOptimiserSchema = z.strictObject({
  base_url: httpUrl().default("https://api.openai.com/v1").describe("OpenAI-compatible base URL"),
  model: z.string().min(1).default("gpt-4o-mini").describe("Model name sent in each request"),
  api_key_env: z.string().min(1).default("OPENAI_API_KEY").describe("Env var holding the API key"),
  api_key_file: nullableText("File whose first line is the API key (used instead of api_key_env when set)"),
  timeout_seconds: z.number().gt(0).default(120).describe("A request still unanswered after this fails (s)"),
  temperature: z.number().min(0).max(2).default(0.7).describe("Sampling temperature of critiques and edits"),
  max_tokens: z.number().int().min(1).default(4096).describe("max_tokens of each optimiser answer (tokens)"),
});

/** The beam search. */
export const ApoSearchSchema = z.strictObject({
  rounds: z.number().int().min(1).default(3).describe("Most rounds (each: critique, edit, score, select)"),
  beam_width: z.number().int().min(1).default(2).describe("Prompts kept after each round (top by validation score)"),
  branch_factor: z.number().int().min(1).default(2).describe("Edited prompts asked for per beam prompt per round"),
  minibatch_size: z.number().int().min(1).default(8).describe("Train inputs each beam prompt runs on per round"),
  gradient_examples: z
    .number()
    .int()
    .min(1)
    .default(4)
    .describe("Lowest-reward minibatch rollouts shown to the optimiser for a critique"),
  patience: z
    .number()
    .int()
    .min(1)
    .default(1)
    .describe("Stop after this many rounds in a row without a better best score (a bad round counts as one)"),
  max_prompt_chars: z.number().int().min(1).default(4000).describe("Longer proposed prompts are rejected (chars)"),
  trace_chars: z.number().int().min(50).default(600).describe("Input and output of each shown trace cut to (chars)"),
});

/** The whole `arclight apo` configuration. */
export const ApoConfigSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/, "letters, digits, '.', '_' or '-' only")
      .default("apo")
      .describe("Run name; history.jsonl and best-prompt.txt go to runs/NAME/"),
    gateway_url: httpUrl()
      .nullable()
      .default(null)
      .describe(
        "A running gateway to use (its key: ARCLIGHT_KEY or --key-file); null: a gateway child on runs/NAME/gateway.db",
      ),
    prompt: section(ApoPromptSchema, "The prompt resource and how agents receive it"),
    data: section(ApoDataSchema, "Train and validation inputs"),
    agent: section(AgentLaunchSchema, "How the agents are started (as the trainer config's controller section)"),
    rollout_timeout_seconds: z.number().gt(0).default(300).describe("A rollout still running after this fails (s)"),
    reward_fillna_value: z.number().default(0).describe("Reward of a rollout that posted none"),
    policy: section(ApoPolicySchema, "The policy model the agents call"),
    optimiser: section(ApoOptimiserSchema, "The optimiser LLM that critiques and edits prompts"),
    search: section(ApoSearchSchema, "The beam search"),
    seed: z.number().int().default(0).describe("Seed of the minibatch order"),
    tracking: TrackingConfigSchema,
  })
  .superRefine((config, ctx) => {
    const required: [string, string, unknown][] = [
      ["data", "train_path", config.data.train_path],
      ["data", "val_path", config.data.val_path],
      ["policy", "endpoint", config.policy.endpoint],
    ];
    for (const [sectionName, key, value] of required) {
      if (value === null) ctx.addIssue({ code: "custom", path: [sectionName, key], message: "required" });
    }
    if (config.prompt.env === null && config.prompt.file_env === null) {
      ctx.addIssue({ code: "custom", path: ["prompt", "env"], message: "set env or file_env (how agents get it)" });
    }
    if (config.agent.command.length === 0 && config.agent.agent_class === null) {
      ctx.addIssue({ code: "custom", path: ["agent", "command"], message: "set command or agent_class" });
    }
  });

/** The `arclight apo` configuration, defaults applied. */
export type ApoConfig = z.output<typeof ApoConfigSchema>;

/** Parses and freezes an `arclight apo` config. @throws {ValidationFailed} naming every bad key */
export function parseApoConfig(value: unknown): Readonly<ApoConfig> {
  return Object.freeze(parseOrThrow(ApoConfigSchema, value, "apo config"));
}
