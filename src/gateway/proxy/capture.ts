/**
 * @module Builds the `model_request` event data of one proxied call and checks that its token ids and logprobs are
 * capturable and aligned. A call whose ids are missing or whose logprobs do not line up with its ids is recorded with
 * `capture_incomplete: true` and those logprobs set to null: never silently misaligned.
 * @see vLLM `return_token_ids` (PR #22587): chat `prompt_token_ids` top level, completions per choice; `token_ids`
 *   per choice, stop id included; chat `logprobs.content` / completions `logprobs.token_logprobs`, one per id.
 */
import type { Model, ModelRequestData } from "../../protocol/index.js";

type Json = Record<string, unknown>;

/** Which upstream endpoint a call targets. */
export type ProxyEndpointKind = "chat" | "completions";

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Whether the upstream body asks for logprobs (chat `logprobs: true`; completions an integer n, `false`/null = no).
 * @param request - the body sent upstream
 */
export function logprobsRequested(request: Json): boolean {
  return request.logprobs !== undefined && request.logprobs !== null && request.logprobs !== false;
}

function logprobCount(kind: ProxyEndpointKind, logprobs: unknown): number | null {
  if (!isObject(logprobs)) return null;
  const list = kind === "chat" ? logprobs.content : logprobs.token_logprobs;
  return Array.isArray(list) ? list.length : null;
}

/**
 * Checks a successful response (non-stream, or assembled from a stream) for capturable ids and aligned logprobs.
 * Rules, per choice: `token_ids` must be an array; when logprobs were asked, their count must equal the ids' count;
 * logprobs that do not line up are replaced by null. Prompt ids must be present (chat top level, completions per
 * choice).
 * @param response - the parsed upstream body; not mutated
 * @param wantLogprobs - whether the request asked for logprobs
 * @returns the body to record (`response` itself when nothing changed, else a shallow copy) and whether capture is
 *   incomplete
 */
export function checkCapture(
  kind: ProxyEndpointKind,
  response: Json,
  wantLogprobs: boolean,
): { response: Json; incomplete: boolean } {
  let incomplete = kind === "chat" && !Array.isArray(response.prompt_token_ids);
  if (!Array.isArray(response.choices)) return { response, incomplete: true };
  let changed = false;
  const choices = response.choices.map((choice: unknown) => {
    if (!isObject(choice)) return choice;
    if (kind === "completions" && !Array.isArray(choice.prompt_token_ids)) incomplete = true;
    const ids = Array.isArray(choice.token_ids) ? choice.token_ids : null;
    if (ids === null) incomplete = true;
    const count = logprobCount(kind, choice.logprobs);
    const aligned = ids !== null && count === ids.length;
    if (count === null && !wantLogprobs) return choice;
    if (aligned) return choice;
    incomplete = true;
    if (choice.logprobs === null) return choice;
    changed = true;
    return { ...choice, logprobs: null };
  });
  return { response: changed ? { ...response, choices } : response, incomplete };
}

/** Everything known about one finished proxied call. */
export interface CallRecord {
  kind: ProxyEndpointKind;
  /** The model name sent upstream. */
  model: string;
  /** The endpoint that answered (or was last tried); null when none was reached. */
  endpoint: Model | null;
  /** The body sent upstream. */
  request: Json;
  /** The upstream body on success (assembled for a stream); null on error. */
  response: Json | null;
  /** The upstream error body, or `{message}` for a transport failure; null on success. */
  error: unknown;
  /** Wall time from the agent's call to the end of the answer, ms. */
  latencyMs: number;
  /** The HTTP status the agent got (upstream's, or 502/504 from the proxy). */
  httpStatus: number;
  /** Upstream tries beyond the first. */
  retryCount: number;
  /** Set by the stream assembler when chunks lacked ids or logprobs. */
  captureIncomplete?: boolean;
}

/**
 * Builds the `model_request` event data of one call.
 * @param call - the finished call
 * @returns event data matching `ModelRequestDataSchema`; `status` is `ok` only for a 2xx with a body
 */
export function buildModelRequestData(call: CallRecord): ModelRequestData {
  const ok = call.httpStatus >= 200 && call.httpStatus < 300 && call.response !== null && call.error == null;
  let response = call.response;
  let incomplete = call.captureIncomplete === true;
  if (ok && response) {
    const checked = checkCapture(call.kind, response, logprobsRequested(call.request));
    response = checked.response;
    incomplete ||= checked.incomplete;
  }
  const firstChoice = Array.isArray(response?.choices) ? response.choices[0] : undefined;
  const data: ModelRequestData = {
    model: call.model,
    model_version: call.endpoint?.version ?? 0,
    request: call.request,
    response,
    latency_ms: call.latencyMs,
    http_status: call.httpStatus,
    status: ok ? "ok" : "error",
    retry_count: call.retryCount,
    usage: response?.usage ?? null,
    finish_reason: isObject(firstChoice) ? ((firstChoice.finish_reason as string | null) ?? null) : null,
  };
  if (call.endpoint) {
    data.server = { model: call.endpoint.model, endpoint: call.endpoint.endpoint, version: call.endpoint.version };
  }
  if (incomplete) data.capture_incomplete = true;
  if (!ok) data.error = call.error ?? { message: `upstream answered ${call.httpStatus}` };
  return data;
}
