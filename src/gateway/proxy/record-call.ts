/**
 * @module Records one proxied call as its `model_request` event, committed before the agent gets the answer. The
 * event's token ids and logprobs are checked first: a call whose ids are missing or disagree with the upstream's usage
 * count, or whose logprobs are missing, non-finite or misaligned, is recorded with `capture_incomplete: true` and
 * its reasons (misaligned logprobs nulled), never silently wrong. A failed commit becomes a retryable 503 to the agent.
 * @see vLLM `return_token_ids` (PR #22587): chat `prompt_token_ids` top level, completions per choice; `token_ids`
 *   per choice, stop id included; chat `logprobs.content` / completions `logprobs.token_logprobs`, one per id.
 */
import type { Model, ModelRequestData } from "../../protocol/index.js";
import { ArclightError, StoreUnavailable } from "../../protocol/index.js";
import { LOGPROB_FLOOR } from "../../protocol/logprob-floor.js";
import type { Store } from "../../store/store.js";
import type { DrainDeadline } from "./call-lifetime.js";
import type { ProxyEndpointKind, TrackedCall } from "./call-request.js";

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether the upstream body asks for logprobs (chat `logprobs: true`; completions an integer n). */
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
 * The `model_request` event data of one finished call; `status` is `ok` only for a 2xx with a body, and
 * `capture_incomplete` is set when {@link checkCapture} or the stream assembler found a problem.
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

/** Seconds an agent is told to wait (`Retry-After`) when its call's event could not be stored. */
export const STORE_RETRY_AFTER_SECONDS = 1;

/**
 * Appends the call's `model_request` event and resolves once it is committed.
 * @param known - texts already held for the request and response, spliced into the event's JSON
 * @param extra - fields added to the event data (a tito call's `tito` record)
 * @throws {ArclightError} a 4xx the store raised about the rollout (e.g. `StaleAttempt`: the attempt was superseded
 *   meanwhile), unchanged
 * @throws {StoreUnavailable} anything else (database locked past its wait, disk full, connection lost), with
 *   `retry_after_seconds`: the event is not stored, so the agent must not take the answer as recorded
 */
export async function recordCall(
  store: Store,
  call: TrackedCall,
  record: CallRecord,
  known: KnownJson,
  extra: Record<string, unknown> = {},
): Promise<void> {
  try {
    const data = Object.assign(buildModelRequestData(record), call.identity, call.requestIds, extra);
    const dataJson = modelRequestDataJson(data, known);
    await store.appendEvents(call.rolloutId, call.attemptId, [{ event_type: "model_request", data, dataJson }]);
  } catch (err) {
    call.log.error({ err, rolloutId: call.rolloutId, attemptId: call.attemptId }, "model_request event not recorded");
    throw storeFailure(err);
  }
}

/** The error the agent gets for an event not stored: a 4xx about the rollout as it is, else a retryable 503. */
export function storeFailure(err: unknown): ArclightError {
  if (err instanceof ArclightError && err.status < 500) return err;
  const reason = err instanceof Error ? err.message : String(err);
  const advised = err instanceof StoreUnavailable ? err.fields.retry_after_seconds : undefined;
  return new StoreUnavailable(`The call was answered upstream but could not be recorded (${reason}); retry it`, {
    cause: err,
    retryAfterSeconds: typeof advised === "number" ? advised : STORE_RETRY_AFTER_SECONDS,
  });
}

/** Texts the proxy already has, each with the object it is the JSON of. */
export interface KnownJson {
  /** The body sent upstream, and its text (the agent's text with the proxy's fields spliced in). */
  request: unknown;
  requestText: string;
  /** The parsed upstream body, and the text it was parsed from; absent for a stream (assembled, no text). */
  response?: unknown;
  responseText?: string;
}

/**
 * `JSON.stringify(data)`, with `data.request` / `data.response` taken from `known` as text when they are the very
 * objects `known` names (a response the capture check changed is a new object and is serialised).
 */
export function modelRequestDataJson(data: ModelRequestData, known: KnownJson): string {
  const { request, response } = data;
  if (request === undefined || response === undefined) return JSON.stringify(data);
  let json = "{";
  let position = 0;
  // One pass over the keys in order, each written as JSON.stringify would (an undefined value is left out).
  for (const key in data) {
    const value = (data as unknown as Record<string, unknown>)[key];
    // Anything but the key order buildModelRequestData writes falls back to the plain path (so the two texts are
    // never first: the comma before them is always due).
    if (position < 4 && key !== LEADING_KEYS[position]) return JSON.stringify(data);
    if (key === "request")
      json += `,"request":${request === known.request ? known.requestText : JSON.stringify(request)}`;
    else if (key === "response") json += `,"response":${responseJson(response, known)}`;
    else {
      const valueJson = JSON.stringify(value);
      if (valueJson !== undefined) json += `${json.length === 1 ? "" : ","}${JSON.stringify(key)}:${valueJson}`;
    }
    position++;
  }
  return `${json}}`;
}

/** The keys `buildModelRequestData` writes first, in its order. */
const LEADING_KEYS = ["model", "model_version", "request", "response"] as const;

/** The response's JSON: the upstream's own text when `response` is the very object parsed from it. */
function responseJson(response: unknown, known: KnownJson): string {
  return known.responseText !== undefined && response === known.response
    ? known.responseText
    : JSON.stringify(response);
}

/**
 * Appends an `abort` event when the drain deadline cut the call short (beside its `model_request`), so the trainer and
 * an operator see which calls a weight update aborted. A failed append is logged only: the agent has its error.
 */
export async function recordAbort(
  store: Store,
  call: TrackedCall,
  reason: DrainDeadline,
  latencyMs: number,
): Promise<void> {
  const data = {
    reason: "drain_deadline",
    message: reason.message,
    drain_timeout_ms: reason.limitMs,
    latency_ms: latencyMs,
    upstream_request_id: call.requestIds.upstream_request_id,
  };
  try {
    await store.appendEvents(call.rolloutId, call.attemptId, [{ event_type: "abort", data }]);
  } catch (err) {
    call.log.error({ err, rolloutId: call.rolloutId }, "abort event not recorded");
  }
}
