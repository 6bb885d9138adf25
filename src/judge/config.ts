/**
 * @module The trainer config's `judge` section: an LLM judge over any OpenAI-compatible endpoint that scores each
 * finished rollout's answer against a rubric (`pointwise`) or ranks a group's answers against each other (`group`).
 */
import { z } from "zod";

/** The rubric used when the config gives none. */
export const DEFAULT_RUBRIC =
  "Judge whether the answer correctly and completely solves the task. Reward a correct final answer; penalise wrong, " +
  "unsupported or missing answers. Ignore style and length.";

/** The `judge` section. */
export const JudgeConfigSchema = z
  .strictObject({
    enabled: z.boolean().default(false).describe("Score finished rollouts with an LLM judge (docs/judge.md)"),
    base_url: z
      .string()
      .default("")
      .describe("OpenAI-compatible base URL of the judge, e.g. http://127.0.0.1:8001/v1 (required when enabled)"),
    model: z.string().default("").describe("Model name the judge endpoint serves (required when enabled)"),
    api_key_env: z.string().default("").describe("Env var holding the judge endpoint's API key; empty: no key"),
    mode: z
      .enum(["pointwise", "group"])
      .default("pointwise")
      .describe("pointwise: each answer scored on the rubric; group: a group's answers ranked against each other"),
    rubric: z.string().min(1).default(DEFAULT_RUBRIC).describe("What the judge is told to reward"),
    task_field: z
      .string()
      .default("question")
      .describe("Input field shown to the judge as the task; the whole input as JSON when the field is absent"),
    min_score: z.number().default(0).describe("pointwise: lowest score the judge may give"),
    max_score: z.number().default(10).describe("pointwise: highest score the judge may give"),
    weight: z.number().refine(Number.isFinite).default(1).describe("Judged reward (0..1) is multiplied by this"),
    combine: z
      .enum(["add", "replace"])
      .default("add")
      .describe("add: final reward = the agent's + weight × judged; replace: final reward = weight × judged"),
    temperature: z.number().min(0).default(0).describe("Judge sampling temperature"),
    max_tokens: z.number().int().min(1).default(512).describe("Judge reply length cap, tokens"),
    timeout_seconds: z.number().gt(0).default(60).describe("Per judge request (s)"),
    max_attempts: z
      .number()
      .int()
      .min(1)
      .max(10)
      .default(3)
      .describe("Judge requests per answer or group: a failed request or an unparsable reply is retried"),
  })
  .superRefine((judge, ctx) => {
    if (!judge.enabled) return;
    if (!/^https?:\/\/\S+$/.test(judge.base_url)) {
      ctx.addIssue({ code: "custom", path: ["base_url"], message: "an http(s) URL is required when enabled" });
    }
    if (judge.model === "") ctx.addIssue({ code: "custom", path: ["model"], message: "required when enabled" });
    if (judge.min_score >= judge.max_score) {
      ctx.addIssue({ code: "custom", path: ["max_score"], message: "must exceed min_score" });
    }
  });

/** The `judge` section, parsed. */
export type JudgeConfig = z.infer<typeof JudgeConfigSchema>;
