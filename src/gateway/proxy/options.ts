/** @module Options of the capturing LLM proxy: model name, sampling temperatures, upstream timeout, retries, pool size. */
import { z } from "zod";

/**
 * Options of the capturing proxy, every field defaulted. The gateway's config nests this object; tests build it with
 * {@link resolveProxyOptions}.
 */
export const ProxyOptionsSchema = z.strictObject({
  modelName: z
    .string()
    .default("")
    .describe("model name sent upstream and used to look up endpoints; empty keeps the agent's own `model`"),
  trainTemperature: z.number().min(0).default(1).describe("temperature forced on train-mode calls"),
  valTemperature: z.number().min(0).default(0).describe("temperature forced on val-mode calls"),
  includeLogProbs: z.boolean().default(true).describe("ask for `logprobs: true` on train-mode calls"),
  upstreamTimeoutMs: z
    .number()
    .int()
    .positive()
    .default(600_000)
    .describe("ms to wait for response headers, and between two body chunks (600 s)"),
  upstreamTotalTimeoutMs: z
    .number()
    .int()
    .positive()
    .default(600_000)
    .describe("ms a whole call may take, retries and a streamed answer included (600 s, an OpenAI SDK's own limit)"),
  maxAttempts: z.number().int().min(1).max(6).default(6).describe("upstream tries per call, first one included"),
  retryAfterMaxMs: z
    .number()
    .int()
    .min(0)
    .default(10_000)
    .describe(
      "longest upstream `Retry-After` the proxy waits out before a retry, ms; a longer one ends the retries and " +
        "reaches the agent with its `Retry-After`",
    ),
  retryBudgetRatio: z
    .number()
    .min(0)
    .default(0.2)
    .describe("retries per endpoint per window, as a fraction of first tries (plus retryBudgetMinRetries)"),
  retryBudgetMinRetries: z.number().int().min(0).default(10).describe("retries per endpoint per window always allowed"),
  retryBudgetWindowMs: z.number().int().positive().default(10_000).describe("retry budget window, ms"),
  maxResponseBytes: z
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024)
    .describe("largest upstream answer, bytes (32 MiB); a larger one is cut off and the call fails with 502"),
  upstreamKey: z.string().default("").describe("API key sent upstream as `Authorization: Bearer`; empty: none"),
  drainTimeoutMs: z
    .number()
    .int()
    .positive()
    .default(120_000)
    .describe("ms calls may run on after a pause; then they are aborted (503 to the agent, an `abort` event)"),
  retryBackoffBaseMs: z
    .number()
    .int()
    .min(0)
    .default(250)
    .describe("backoff cap of the first retry, doubled each retry"),
  retryBackoffMaxMs: z.number().int().min(0).default(8_000).describe("largest backoff cap, ms"),
  connections: z.number().int().min(1).default(512).describe("keep-alive sockets per upstream endpoint"),
  endpointCooldownBaseMs: z
    .number()
    .int()
    .min(0)
    .default(1_000)
    .describe("ms an endpoint is skipped after its first connection failure, doubled per further failure"),
  endpointCooldownMaxMs: z.number().int().min(0).default(60_000).describe("longest endpoint cool-down, ms"),
  agentModels: z
    .record(z.string(), z.string().min(1))
    .default(() => ({}))
    .describe("requested model name → agent name, recorded on calls that name no agent in their path or header"),
  agentRoutes: z
    .record(z.string(), z.string().min(1))
    .default(() => ({}))
    .describe("agent name or /regex/ → model name whose endpoints serve that agent's calls (e.g. a frozen snapshot)"),
  bodyLimitBytes: z
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024)
    .describe("largest agent request body, bytes (32 MiB; token-array prompts are big)"),
});

/** Options of the capturing proxy, defaults applied. */
export type ProxyOptions = Readonly<z.infer<typeof ProxyOptionsSchema>>;
/** Options of the capturing proxy as a caller writes them (every field optional). */
export type ProxyOptionsInput = z.input<typeof ProxyOptionsSchema>;

/**
 * Applies defaults and freezes the result.
 * @param input - partial options; unknown keys are rejected
 * @returns frozen options
 * @throws {z.ZodError} on an unknown key or a value out of range
 */
export function resolveProxyOptions(input: ProxyOptionsInput = {}): ProxyOptions {
  return Object.freeze(ProxyOptionsSchema.parse(input));
}
