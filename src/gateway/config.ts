/** @module The gateway's configuration: one strict zod schema with defaults, parsed once by the CLI. */
import { z } from "zod";
import { DEFAULT_HEADERS_TIMEOUT_SECONDS, DEFAULT_REQUEST_TIMEOUT_SECONDS } from "../http/server-timeouts.js";
import { invalidAgentEntry } from "../protocol/agent-match.js";
import { MAX_MODEL_NAME_CHARS } from "../protocol/model.js";
import { TRIPLET_DEDUPE_RULES } from "../protocol/triplet.js";
import { type ProxyOptions, resolveProxyOptions } from "./proxy/options.js";

/** Default request body limit: 32 MiB. */
export const DEFAULT_BODY_LIMIT_BYTES = 32 * 1024 * 1024;

/** Pino log levels the gateway accepts. */
export const LogLevelSchema = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

/**
 * Why a key with whitespace at either end is refused: HTTP trims a header value, so no client could present it (a
 * newline left by `echo key > file` in ARCLIGHT_KEY made every request 401, and a key of spaces too).
 */
const PRESENTABLE_KEY =
  "starts or ends with whitespace (a trailing newline?); no client can present it, since HTTP trims header values";

/** Gateway configuration (YAML keys, env and flags all map onto these names). Unknown keys fail. */
export const GatewayConfigSchema = z.strictObject({
  host: z.string().min(1).default("127.0.0.1").describe("interface to listen on"),
  port: z.number().int().min(0).max(65535).default(8080).describe("TCP port; 0 picks a free one"),
  key: z
    .string()
    .refine((key) => key.trim() === key, PRESENTABLE_KEY)
    .default("")
    .describe(
      "admin key (Bearer or x-api-key) on every route but /healthz; agents get per-attempt tokens signed with it; empty disables auth. Env ARCLIGHT_KEY/AGL_KEY, or --key-file / ARCLIGHT_KEY_FILE",
    ),
  store: z
    .string()
    .regex(/^(memory|sqlite:.+|postgres(ql)?:\/\/.+)$/, 'expected "memory", "sqlite:PATH" or "postgres://…"')
    .default("sqlite:./.arclight/gateway.db")
    .describe(
      "where rollouts and events live: memory | sqlite:PATH | postgres://USER@HOST:PORT/DB (several gateways may " +
        "share one PostgreSQL database). Env ARCLIGHT_STORE",
    ),
  store_lock_wait_seconds: z
    .number()
    .positive()
    .default(10)
    .describe(
      "SQLite store: how long a write keeps retrying (on a timer, never blocking the gateway) while another process " +
        "holds the file's write lock, before it fails with 503 + Retry-After",
    ),
  body_limit_bytes: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_BODY_LIMIT_BYTES)
    .describe("largest request body accepted, in bytes (larger → 413)"),
  model_name: z
    .string()
    .max(MAX_MODEL_NAME_CHARS)
    .default("")
    .describe(
      "model name the proxy sends upstream and looks endpoints up by (POST /api/models); empty keeps the agent's",
    ),
  train_temperature: z.number().min(0).default(1).describe("sampling temperature the proxy sets in train mode"),
  val_temperature: z.number().min(0).default(0.7).describe("sampling temperature the proxy sets in val mode"),
  include_log_probs: z.boolean().default(true).describe("ask the upstream for logprobs in train mode"),
  upstream_timeout_seconds: z.number().positive().default(600).describe("proxy upstream call timeout, in seconds"),
  upstream_key: z
    .string()
    .default("")
    .describe(
      "API key the proxy sends upstream as `Authorization: Bearer` (a hosted OpenAI-compatible endpoint); empty: " +
        "none. Env ARCLIGHT_UPSTREAM_KEY",
    ),
  upstream_total_timeout_seconds: z
    .number()
    .positive()
    .default(600)
    .describe("longest a whole proxied call may take, retries and a streamed answer included (504 after), seconds"),
  upstream_retry_after_max_seconds: z
    .number()
    .min(0)
    .default(10)
    .describe(
      "longest upstream Retry-After the proxy waits out before retrying; a longer one goes to the agent, seconds",
    ),
  upstream_retry_budget_ratio: z
    .number()
    .min(0)
    .default(0.2)
    .describe("retries per endpoint per 10 s, as a fraction of first tries (plus 10), so retries cannot multiply load"),
  upstream_max_response_bytes: z
    .number()
    .int()
    .positive()
    .default(32 * 1024 * 1024)
    .describe("largest upstream answer, in bytes; a larger one is cut off (502)"),
  drain_timeout_seconds: z
    .number()
    .positive()
    .default(120)
    .describe("calls still running this long after a proxy pause are aborted (503 + Retry-After, an `abort` event)"),
  agent_models: z
    .record(z.string(), z.string().min(1))
    .default(() => ({}))
    .describe("requested model name → agent name, recorded on model calls that name no agent (path or header)"),
  agent_routes: z
    .record(z.string(), z.string().min(1))
    .default(() => ({}))
    .refine(
      (routes) => invalidAgentEntry(Object.keys(routes)) === null,
      "a /regex/ key is not a valid regular expression",
    )
    .describe(
      "agent name or /regex/ → model name: that agent's calls are served by the endpoints registered under the " +
        "model name (first match wins), e.g. frozen agents on a snapshot of the starting weights",
    ),
  headers_timeout_seconds: z
    .number()
    .positive()
    .default(DEFAULT_HEADERS_TIMEOUT_SECONDS)
    .describe("seconds a client has to send a request's headers; then 408 and the socket is closed"),
  request_timeout_seconds: z
    .number()
    .positive()
    .default(DEFAULT_REQUEST_TIMEOUT_SECONDS)
    .describe("seconds a client has to send a whole request, body included (not the answer: streams may run longer)"),
  shutdown_grace_seconds: z
    .number()
    .min(0)
    .default(30)
    .describe("on SIGTERM/SIGINT, seconds in-flight requests get before every open socket is closed"),
  triplet_dedupe: z
    .enum(TRIPLET_DEDUPE_RULES)
    .default("prompt")
    .describe(
      "which repeated model calls `format=triplet` leaves out when the request does not say (`dedupe=`): prompt " +
        "(Agent Lightning v1.0: the last call per identical prompt ids) or retries (only failed calls retried and " +
        "repeated agent request ids; what arclight's trainer asks for, docs/training-correctness.md)",
    ),
  log_level: LogLevelSchema.default("info").describe("pino log level"),
  dashboard: z.boolean().default(true).describe("serve the browser dashboard at /ui and its /api/runs routes"),
  dashboard_key: z
    .string()
    .refine((key) => key.trim() === key, PRESENTABLE_KEY)
    .default("")
    .describe("read-only key for the dashboard login (the gateway key also logs in); empty: only the gateway key"),
  runs_dir: z
    .string()
    .default("")
    .describe("folder of finished runs (NAME/metrics.jsonl) the dashboard shows at start, e.g. runs; empty: none"),
});

/** Gateway configuration, defaults applied. */
export type GatewayConfig = z.infer<typeof GatewayConfigSchema>;
/** Gateway configuration as written in YAML (every key optional). */
export type GatewayConfigInput = z.input<typeof GatewayConfigSchema>;

/**
 * Builds a frozen configuration from partial input, applying defaults (for tests and embedding).
 * @param input - any subset of the keys
 * @throws {z.ZodError} for an unknown key or a bad value
 */
export function gatewayConfig(input: GatewayConfigInput = {}): Readonly<GatewayConfig> {
  return Object.freeze(GatewayConfigSchema.parse(input));
}

/**
 * The proxy plugin's options from the gateway configuration (model name, temperatures, logprobs, timeouts, body and
 * answer limits, Retry-After cap, retry budget ratio, drain deadline); the other retry and pool settings keep the
 * proxy's defaults.
 * @param config - the resolved gateway configuration
 * @returns frozen proxy options (`upstreamTimeoutMs` = `upstream_timeout_seconds` × 1000)
 */
export function proxyOptionsOf(config: Readonly<GatewayConfig>): ProxyOptions {
  return resolveProxyOptions({
    modelName: config.model_name,
    trainTemperature: config.train_temperature,
    valTemperature: config.val_temperature,
    includeLogProbs: config.include_log_probs,
    upstreamTimeoutMs: Math.round(config.upstream_timeout_seconds * 1000),
    upstreamTotalTimeoutMs: Math.round(config.upstream_total_timeout_seconds * 1000),
    retryAfterMaxMs: Math.round(config.upstream_retry_after_max_seconds * 1000),
    retryBudgetRatio: config.upstream_retry_budget_ratio,
    maxResponseBytes: config.upstream_max_response_bytes,
    drainTimeoutMs: Math.round(config.drain_timeout_seconds * 1000),
    upstreamKey: config.upstream_key,
    bodyLimitBytes: config.body_limit_bytes,
    agentModels: config.agent_models,
    agentRoutes: config.agent_routes,
  });
}
