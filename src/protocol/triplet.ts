/** @module The "triplet" view of events (Agent Lightning v1.0): token ids, logprobs and rewards. */
import { indexSpans, modelCallAgentName } from "./agent-name.js";
import type { Event } from "./event.js";

/** `data` of a `model_request` event in triplet format. Token ids are exactly those the model saw and produced. */
export interface TripletModelRequest {
  /** Prompt token ids as the server tokenised them, [promptLen]. */
  prompt_token_ids: number[];
  /** Generated token ids (stop id included), [respLen]. */
  response_token_ids: number[];
  /** Logprob (nats) of each response token under the sampling policy, [respLen]; null when missing or non-finite. */
  response_log_probs: number[] | null;
  /** Which weights produced the response; null fields when the event does not say (AGL v1.0 shape). */
  server: { model: string | null; version: number | null };
  /** Upstream HTTP status, when recorded. */
  http_status?: number;
  /** `error` when the call failed (such rows are skipped by the trainer). */
  status?: "ok" | "error";
  /** The upstream error object (the `error` of vLLM's / OpenAI's error body, e.g. `{message, type, code}`), or the
   *  proxy's `{message}` for a transport failure; present when the call failed. */
  error?: unknown;
  /** True when the proxy could not capture ids/logprobs consistently (e.g. a stream missing `token_ids`). */
  capture_incomplete?: boolean;
  /** The calling agent (arclight's extra key), from the proxy or the enclosing span. */
  agent_name?: string;
  /** Why (`CaptureReason` codes, e.g. `usage_mismatch`, `logprobs_nonfinite`); present with `capture_incomplete`. */
  capture_incomplete_reasons?: string[];
  /** The agent's own request id (body `request_id` or `x-request-id` header), when it sent one. */
  agent_request_id?: string;
  /** Earlier events of the same call (true retries) the view left out in favour of this one; absent when none. */
  deduped_retries?: number;
  /** The upstream response's `id` (`chatcmpl-…`), which the agent sees: a reward's `call_id` may name it. */
  response_id?: string;
  /** The span the call was made in (`trace_context.span_id`); a reward's `call_id` may name it. */
  span_id?: string;
  /** Why generation stopped (`stop`, `length`, `tool_calls`, …), when recorded. */
  finish_reason?: string;
  /** The first choice's text (chat `message.content` or completions `text`), when it has one. */
  response_text?: string;
  /** The first choice's tool calls as the model wrote them (`arguments` unparsed JSON text). */
  tool_calls?: TripletToolCall[];
  /** Names of the tools the request offered (`tools[].function.name`); absent when it offered none. */
  tool_names?: string[];
}

/** One tool call of a response, as written by the model. */
export interface TripletToolCall {
  name: string;
  /** JSON text as generated; it may not parse. */
  arguments: string;
}

/** `data` of a `reward` event in triplet format. */
export interface TripletReward {
  /** The reward; null when the event carried none (AGL v1.0 accepts such events). */
  value: number | null;
  source?: string;
  reason?: string;
  /** The model call this reward is for (arclight's extra key); absent for a rollout-level reward. */
  call_id?: string;
}

/** An event in triplet format: `model_request` and `reward` data trimmed, every other event unchanged. */
export type TripletEvent = Omit<Event, "data"> & {
  data: TripletModelRequest | TripletReward | Record<string, unknown>;
};

/** Narrows an unknown JSON value to a plain object, else undefined. */
function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Narrows an unknown JSON value to an array of integers (token ids), else undefined. */
function asTokenIds(value: unknown): number[] | undefined {
  return Array.isArray(value) && value.every((v) => Number.isInteger(v)) ? (value as number[]) : undefined;
}

/** Per-token logprobs (nats) of a chat or completions choice; null unless finite and one per response token. */
export function choiceLogprobs(choice: Record<string, unknown> | undefined, responseLen: number): number[] | null {
  const logprobs = asRecord(choice?.logprobs);
  if (!logprobs) return null;
  let values: unknown[] | undefined;
  if (Array.isArray(logprobs.content)) values = logprobs.content.map((entry) => asRecord(entry)?.logprob);
  else if (Array.isArray(logprobs.token_logprobs)) values = logprobs.token_logprobs;
  if (!values || values.length !== responseLen) return null;
  if (!values.every((v) => typeof v === "number" && Number.isFinite(v))) return null;
  return values as number[];
}

/**
 * Trims a `model_request`'s data to token ids, logprobs and server, missing ids as `[]` (AGL v1.0).
 * @see vLLM OpenAI-compatible server, `return_token_ids`
 */
export function toTripletModelRequest(data: Record<string, unknown>): TripletModelRequest {
  const response = asRecord(data.response);
  const choices = Array.isArray(response?.choices) ? response.choices : [];
  const choice = asRecord(choices[0]);
  const promptTokenIds = asTokenIds(response?.prompt_token_ids) ?? asTokenIds(choice?.prompt_token_ids) ?? [];
  const responseTokenIds = asTokenIds(choice?.token_ids) ?? [];
  const server = asRecord(data.server);
  const out: TripletModelRequest = {
    prompt_token_ids: promptTokenIds,
    response_token_ids: responseTokenIds,
    response_log_probs: choiceLogprobs(choice, responseTokenIds.length),
    server: {
      model: stringOrNull(server?.model ?? data.model),
      version: numberOrNull(server?.version ?? data.model_version),
    },
  };
  if (typeof data.http_status === "number") out.http_status = data.http_status;
  if (data.status === "ok" || data.status === "error") out.status = data.status;
  const error = upstreamError(data);
  if (error !== undefined) out.error = error;
  if (typeof data.capture_incomplete === "boolean") out.capture_incomplete = data.capture_incomplete;
  if (Array.isArray(data.capture_incomplete_reasons))
    out.capture_incomplete_reasons = data.capture_incomplete_reasons.filter((r) => typeof r === "string");
  if (typeof data.agent_request_id === "string") out.agent_request_id = data.agent_request_id;
  Object.assign(out, creditFields(data, response, choice));
  return out;
}

/** The fields credit assignment reads: ids a reward may name, the finish reason, the text and tool calls. */
function creditFields(
  data: Record<string, unknown>,
  response: Record<string, unknown> | undefined,
  choice: Record<string, unknown> | undefined,
): Partial<TripletModelRequest> {
  const out: Partial<TripletModelRequest> = {};
  if (typeof response?.id === "string") out.response_id = response.id;
  const spanId = asRecord(data.trace_context)?.span_id;
  if (typeof spanId === "string") out.span_id = spanId;
  const finish = typeof data.finish_reason === "string" ? data.finish_reason : choice?.finish_reason;
  if (typeof finish === "string") out.finish_reason = finish;
  const message = asRecord(choice?.message);
  const text = message ? message.content : choice?.text;
  if (typeof text === "string") out.response_text = text;
  const toolCalls = Array.isArray(message?.tool_calls) ? message.tool_calls.flatMap(toolCallOf) : [];
  if (toolCalls.length > 0) out.tool_calls = toolCalls;
  const tools = asRecord(data.request)?.tools;
  if (Array.isArray(tools)) out.tool_names = tools.flatMap(toolNameOf);
  return out;
}

/** `{name, arguments}` of a chat tool call (`{function: {name, arguments}}`), or nothing when it has no name. */
function toolCallOf(value: unknown): TripletToolCall[] {
  const fn = asRecord(asRecord(value)?.function);
  if (typeof fn?.name !== "string") return [];
  const args = fn.arguments;
  return [{ name: fn.name, arguments: typeof args === "string" ? args : JSON.stringify(args ?? null) }];
}

/** The name of an offered tool: chat `{type: "function", function: {name}}`, or a bare `{name}`. */
function toolNameOf(value: unknown): string[] {
  const tool = asRecord(value);
  const name = asRecord(tool?.function)?.name ?? tool?.name;
  return typeof name === "string" ? [name] : [];
}

function stringOrNull(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

function numberOrNull(value: unknown): number | null {
  return typeof value === "number" ? value : null;
}

/** The upstream body's `error` object, as AGL's triplet gives it, else what the proxy recorded. */
function upstreamError(data: Record<string, unknown>): unknown {
  const response = asRecord(data.response);
  if (response && "error" in response) return response.error;
  const error = asRecord(data.error);
  if (error && "error" in error) return error.error;
  return data.error;
}

/** Trims a `reward`'s data to `value` (null when absent), `source`, `reason` and `call_id`. */
export function toTripletReward(data: Record<string, unknown>): TripletReward {
  const out: TripletReward = { value: typeof data.value === "number" ? data.value : null };
  if (typeof data.source === "string") out.source = data.source;
  if (typeof data.reason === "string") out.reason = data.reason;
  if (typeof data.call_id === "string") out.call_id = data.call_id;
  return out;
}

/**
 * Which repeated calls the triplet view drops: `prompt` (AGL v1.0) keeps the last of identical prompts; `retries`
 * drops only failed calls retried with that prompt or one `agent_request_id` (docs/training-correctness.md).
 */
export const TRIPLET_DEDUPE_RULES = ["prompt", "retries"] as const;
/** See {@link TRIPLET_DEDUPE_RULES}. */
export type TripletDedupe = (typeof TRIPLET_DEDUPE_RULES)[number];

/**
 * The triplet view of one attempt's events; a survivor of {@link TRIPLET_DEDUPE_RULES} keeps its position.
 *
 * Example: `[mr(p=[1,2], error), reward(0.5), mr(p=[3,4], r=[20]), mr(p=[1,2], r=[30]), mr(p=[1,2], r=[40])]`
 * becomes, by `prompt`, `[reward(0.5), mr([3,4] → [20]), mr([1,2] → [40])]`, and by `retries`
 * `[reward(0.5), mr([3,4] → [20]), mr([1,2] → [30], deduped_retries 1), mr([1,2] → [40])]`.
 */
export function toTripletEvents(events: readonly Event[], dedupe: TripletDedupe = "prompt"): TripletEvent[] {
  const spans = indexSpans(events);
  const trimmed: TripletEvent[] = events.map((event) => {
    if (event.event_type === "model_request") {
      const data = toTripletModelRequest(event.data);
      const agentName = modelCallAgentName(event.data, spans);
      if (agentName !== undefined) data.agent_name = agentName;
      return { ...event, data };
    }
    if (event.event_type === "reward") return { ...event, data: toTripletReward(event.data) };
    return event;
  });
  return dedupe === "prompt" ? keepLastPerPrompt(trimmed) : dropRetries(trimmed);
}

/** The joined prompt ids of a `model_request` triplet event; undefined for other events and empty prompts. */
function promptKey(event: TripletEvent): string | undefined {
  if (event.event_type !== "model_request") return undefined;
  const ids = (event.data as TripletModelRequest).prompt_token_ids;
  return ids.length > 0 ? ids.join(",") : undefined;
}

/** AGL's rule: of the calls with one non-empty prompt only the last stays, in its own place. */
function keepLastPerPrompt(trimmed: TripletEvent[]): TripletEvent[] {
  const lastIndexByPrompt = new Map<string, number>();
  trimmed.forEach((event, index) => {
    const key = promptKey(event);
    if (key !== undefined) lastIndexByPrompt.set(key, index);
  });
  return trimmed.filter((event, index) => {
    const key = promptKey(event);
    return key === undefined || lastIndexByPrompt.get(key) === index;
  });
}

/** arclight's rule: only failed calls retried with the same prompt, and earlier calls of one agent request id, go. */
function dropRetries(trimmed: TripletEvent[]): TripletEvent[] {
  // Walk backwards: each call looks for a later call that repeats it.
  const laterByPrompt = new Map<string, number>();
  const laterByRequestId = new Map<string, number>();
  const dropped = new Set<number>();
  const replaced = new Map<number, number>();
  for (let index = trimmed.length - 1; index >= 0; index--) {
    const event = trimmed[index]!;
    if (event.event_type !== "model_request") continue;
    const data = event.data as TripletModelRequest;
    const prompt = promptKey(event);
    const byId = data.agent_request_id === undefined ? undefined : laterByRequestId.get(data.agent_request_id);
    const byPrompt = data.status === "error" && prompt !== undefined ? laterByPrompt.get(prompt) : undefined;
    const survivor = byId ?? byPrompt;
    if (survivor !== undefined) {
      dropped.add(index);
      replaced.set(survivor, (replaced.get(survivor) ?? 0) + 1);
      continue;
    }
    if (prompt !== undefined) laterByPrompt.set(prompt, index);
    if (data.agent_request_id !== undefined) laterByRequestId.set(data.agent_request_id, index);
  }
  return trimmed.flatMap((event, index) => {
    if (dropped.has(index)) return [];
    const count = replaced.get(index);
    if (count === undefined) return [event];
    return [{ ...event, data: { ...(event.data as TripletModelRequest), deduped_retries: count } }];
  });
}
