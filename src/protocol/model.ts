/** @module Model endpoint registration: which OpenAI-compatible servers serve a model, at which policy version. */
import { z } from "zod";
import { wellFormedString } from "./text.js";

/** How the proxy serves chat calls: `passthrough` forwards the body; `tito` builds prompt ids itself (docs/tito.md). */
export const ProxyModeSchema = z.enum(["passthrough", "tito"]);
/** A model's proxy mode. */
export type ProxyModelMode = z.infer<typeof ProxyModeSchema>;

/** How `tito` reads tool calls in generated text: a vLLM `--tool-call-parser` name, or `none`. */
export const ToolParserSchema = z.enum([
  "hermes",
  "llama3_json",
  "qwen3_coder",
  "mistral",
  "deepseek_v3",
  "pythonic",
  "none",
]);
/** A tito tool-call parser name. */
export type ToolParserName = z.infer<typeof ToolParserSchema>;

/**
 * How `tito` splits a reasoning model's thinking off its answer: a vLLM `--reasoning-parser` name (`deepseek_r1`,
 * `qwen3`: `<think>…</think>` before the answer, src/wire/reasoning.ts), or `none` (the text stays in `content`).
 */
export const ReasoningParserSchema = z.enum(["deepseek_r1", "qwen3", "none"]);
/** A tito reasoning parser name. */
export type ReasoningParserName = z.infer<typeof ReasoningParserSchema>;

/** Longest model name, characters: a served model name is a repo id or a path (a 503 `no_endpoint` quotes it). */
export const MAX_MODEL_NAME_CHARS = 1000;
/** Longest endpoint URL, characters. */
export const MAX_ENDPOINT_CHARS = 2048;

/** A registered endpoint, keyed by (model, endpoint); arclight's fields are absent on `passthrough` (AGL's shape). */
export const ModelSchema = z.strictObject({
  model: wellFormedString(1, MAX_MODEL_NAME_CHARS),
  endpoint: z
    .url({ protocol: /^https?$/ })
    .max(MAX_ENDPOINT_CHARS)
    .describe("base URL of an OpenAI-compatible server, e.g. http://h:8000/v1"),
  version: z.number().int().min(0).default(0),
  mode: ProxyModeSchema.optional().describe("proxy mode of the model's chat calls; absent: passthrough"),
  tokenizer: wellFormedString(1, 4096)
    .optional()
    .describe("folder the gateway reads tokenizer.json and tokenizer_config.json from (required by tito)"),
  tool_parser: ToolParserSchema.optional().describe("how tito reads tool calls in generated text; absent: hermes"),
  reasoning_parser: ReasoningParserSchema.optional().describe(
    "how tito splits reasoning (<think>…</think>) off generated text into message.reasoning; absent: none",
  ),
});
/** A registered model endpoint. */
export type Model = z.infer<typeof ModelSchema>;
/** A model endpoint as a caller writes it. */
export type ModelInput = z.input<typeof ModelSchema>;

/** A `models` table row: mode, tokenizer and parsers as stored (`passthrough`, null, null, null by default). */
export interface ModelRow {
  model: string;
  endpoint: string;
  version: number;
  mode: string;
  tokenizer: string | null;
  tool_parser: string | null;
  reasoning_parser: string | null;
}

/** The {@link Model} of a stored row, fields at their defaults left out. */
export function modelFromRow(row: ModelRow): Model {
  const model: Model = { model: row.model, endpoint: row.endpoint, version: Number(row.version) };
  if (row.mode === "tito") model.mode = "tito";
  if (row.tokenizer !== null) model.tokenizer = row.tokenizer;
  const parser = ToolParserSchema.safeParse(row.tool_parser);
  if (parser.success) model.tool_parser = parser.data;
  const reasoning = ReasoningParserSchema.safeParse(row.reasoning_parser);
  if (reasoning.success) model.reasoning_parser = reasoning.data;
  return model;
}

/** The endpoint as given, an explicit `passthrough` left out. */
export function normalModel(model: Model): Model {
  const { mode, ...rest } = model;
  return mode === "tito" ? { ...rest, mode } : rest;
}

/** Why an endpoint URL is refused (a query, fragment or credentials would ride on every proxied call), or undefined. */
export function endpointUrlProblem(endpoint: string): string | undefined {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return "not a URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "scheme must be http or https";
  if (url.username !== "" || url.password !== "" || /^[a-z]+:\/\/[^/]*@/i.test(endpoint)) {
    return "credentials (user:password@) are not allowed";
  }
  if (endpoint.includes("?")) return "a query string is not allowed";
  if (endpoint.includes("#")) return "a fragment is not allowed";
  if (url.hostname === "") return "a host is required";
  return undefined;
}

/** The update, keeping stored `mode`, `tokenizer` and parsers it omits (a re-registration must not drop `tito`). */
export function mergeModel(stored: Model | undefined, update: Model): Model {
  const merged: Model = { model: update.model, endpoint: update.endpoint, version: update.version };
  const mode = update.mode ?? stored?.mode;
  const tokenizer = update.tokenizer ?? stored?.tokenizer;
  const toolParser = update.tool_parser ?? stored?.tool_parser;
  if (mode !== undefined) merged.mode = mode;
  if (tokenizer !== undefined) merged.tokenizer = tokenizer;
  if (toolParser !== undefined) merged.tool_parser = toolParser;
  const reasoningParser = update.reasoning_parser ?? stored?.reasoning_parser;
  if (reasoningParser !== undefined) merged.reasoning_parser = reasoningParser;
  return normalModel(merged);
}
