/**
 * @module Builds the `model_request` event data of one proxied call and checks that its token ids and logprobs are
 * capturable, complete and aligned. A call whose ids are missing or disagree with the upstream's own usage count, or
 * whose logprobs are missing, non-finite or do not line up with its ids, is recorded with `capture_incomplete: true`
 * and `capture_incomplete_reasons` (misaligned logprobs set to null): never silently wrong.
 * @see vLLM `return_token_ids` (PR #22587): chat `prompt_token_ids` top level, completions per choice; `token_ids`
 *   per choice, stop id included; chat `logprobs.content` / completions `logprobs.token_logprobs`, one per id.
 */

import type { Model, ModelRequestData } from "../../protocol/index.js";
import { LOGPROB_FLOOR } from "../../protocol/logprob-floor.js";

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

/**
 * Why a call's capture is incomplete, as recorded in `capture_incomplete_reasons`. Reasons starting with `logprobs_`
 * leave the token ids usable (the trainer recomputes or drops the logprobs); every other reason makes the ids
 * untrustworthy (the trainer skips the call).
 */
export type CaptureReason =
  | "no_choices"
  | "prompt_ids_missing"
  | "token_ids_missing"
  | "usage_mismatch"
  | "unfinished"
  | "stream_chunks_incomplete"
  | "stream_chunk_malformed"
  | "response_not_object"
  | "token_ids_undecodable"
  | "logprobs_missing"
  | "logprobs_misaligned"
  | "logprobs_nonfinite"
  | "logprobs_below_floor";

/** The per-token logprob values of a choice (chat `content[].logprob`, completions `token_logprobs`), or null. */
function logprobValues(kind: ProxyEndpointKind, logprobs: unknown): unknown[] | null {
  if (!isObject(logprobs)) return null;
  const list = kind === "chat" ? logprobs.content : logprobs.token_logprobs;
  if (!Array.isArray(list)) return null;
  return kind === "chat" ? list.map((entry) => (isObject(entry) ? entry.logprob : undefined)) : list;
}

/** Finish reasons that mean the generation did not end normally (vLLM's engine `abort` / `error`), or none at all. */
function unfinished(choice: Json): boolean {
  const reason = choice.finish_reason;
  return typeof reason !== "string" || reason === "" || reason === "abort" || reason === "error";
}

/** Checks one choice; adds its reasons and returns the choice to record (logprobs nulled when misaligned). */
function checkChoice(kind: ProxyEndpointKind, choice: Json, wantLogprobs: boolean, reasons: Set<CaptureReason>): Json {
  if (kind === "completions" && !Array.isArray(choice.prompt_token_ids)) reasons.add("prompt_ids_missing");
  if (unfinished(choice)) reasons.add("unfinished");
  const ids = Array.isArray(choice.token_ids) ? choice.token_ids : null;
  if (ids === null) reasons.add("token_ids_missing");
  const values = logprobValues(kind, choice.logprobs);
  if (values === null) {
    if (wantLogprobs) reasons.add("logprobs_missing");
    return choice;
  }
  if (ids !== null && values.length === ids.length) {
    if (!values.every((v) => typeof v === "number" && Number.isFinite(v))) reasons.add("logprobs_nonfinite");
    // vLLM's -9999 (its stand-in for -inf: a token its sampler gave zero probability) or any value below the trainer's
    // floor is no sampling-time logprob: trained as recorded it drives the loss to ~1e8 through the clamped ratio.
    else if (values.some((v) => (v as number) < LOGPROB_FLOOR)) reasons.add("logprobs_below_floor");
    return choice;
  }
  // Logprobs that do not line up with the ids cannot be attributed to tokens: never record them misaligned.
  reasons.add(ids === null ? "logprobs_missing" : "logprobs_misaligned");
  return { ...choice, logprobs: null };
}

/** Σ response ids over the choices, or null when some choice has no ids. */
function responseIdCount(choices: unknown[]): number | null {
  let total = 0;
  for (const choice of choices) {
    if (!isObject(choice) || !Array.isArray(choice.token_ids)) return null;
    total += choice.token_ids.length;
  }
  return total;
}

/**
 * Checks a successful response (non-stream, or assembled from a stream) for capturable ids and aligned logprobs.
 * Rules: prompt ids present (chat top level, completions per choice); per choice `token_ids` an array, a finish
 * reason that is not `abort`/`error`, and when logprobs were asked one finite logprob per id (misaligned ones are
 * replaced by null); and the upstream's own `usage.completion_tokens`, when given, equal to the ids recorded over all
 * choices (vLLM counts every generated id, EOS included: a stream that lost chunks has fewer ids than its usage).
 * @param kind - chat or completions
 * @param response - the parsed upstream body; not mutated
 * @param wantLogprobs - whether the request asked for logprobs
 * @returns the body to record (`response` itself when nothing changed, else a shallow copy) and the reasons capture
 *   is incomplete (empty when complete), in a fixed order
 * @see vLLM `UsageInfo.completion_tokens` = Σ len(token_ids) over choices (`chat_completion/serving.py`, v0.19.0)
 */
export function checkCapture(
  kind: ProxyEndpointKind,
  response: Json,
  wantLogprobs: boolean,
): { response: Json; reasons: CaptureReason[] } {
  const reasons = new Set<CaptureReason>();
  if (kind === "chat" && !Array.isArray(response.prompt_token_ids)) reasons.add("prompt_ids_missing");
  if (!Array.isArray(response.choices) || response.choices.length === 0) {
    return { response, reasons: [...reasons, "no_choices"] };
  }
  let changed = false;
  const choices = response.choices.map((choice: unknown) => {
    if (!isObject(choice)) return choice;
    const checked = checkChoice(kind, choice, wantLogprobs, reasons);
    changed ||= checked !== choice;
    return checked;
  });
  const completionTokens = isObject(response.usage) ? response.usage.completion_tokens : undefined;
  const idCount = responseIdCount(response.choices);
  if (typeof completionTokens === "number" && idCount !== null && idCount !== completionTokens) {
    reasons.add("usage_mismatch");
  }
  return { response: changed ? { ...response, choices } : response, reasons: [...reasons].sort() };
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
  /** Reasons found before the record was built (a malformed SSE event, a body that is not a JSON object). */
  captureReasons?: readonly CaptureReason[];
}

/**
 * Builds the `model_request` event data of one call.
 * @param call - the finished call
 * @returns event data matching `ModelRequestDataSchema`; `status` is `ok` only for a 2xx with a body;
 *   `capture_incomplete` and `capture_incomplete_reasons` set when {@link checkCapture} (or the stream assembler)
 *   found a problem
 */
export function buildModelRequestData(call: CallRecord): ModelRequestData {
  const ok = call.httpStatus >= 200 && call.httpStatus < 300 && call.response !== null && call.error == null;
  let response = call.response;
  const reasons: CaptureReason[] = [];
  if (ok && response) {
    const checked = checkCapture(call.kind, response, logprobsRequested(call.request));
    response = checked.response;
    reasons.push(...checked.reasons);
  }
  for (const reason of call.captureReasons ?? []) if (!reasons.includes(reason)) reasons.push(reason);
  if (call.captureIncomplete === true && reasons.length === 0) reasons.push("stream_chunks_incomplete");
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
  if (reasons.length > 0) {
    data.capture_incomplete = true;
    data.capture_incomplete_reasons = reasons;
  }
  if (!ok) data.error = call.error ?? { message: `upstream answered ${call.httpStatus}` };
  return data;
}
