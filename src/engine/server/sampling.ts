/**
 * @module Request fields → the engine's `SamplingParams`, and the context-length check vLLM does before generating.
 */
import { BadRequest } from "../../protocol/errors.js";
import type { SamplingParams } from "../engine.js";

/** The sampling fields of a chat or completions request (wire names). */
export interface SamplingFields {
  temperature?: number;
  top_p?: number;
  top_k?: number;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  stop?: string | string[] | null;
  stop_token_ids?: number[] | null;
  seed?: number | null;
}

/** What the route knows besides the request. */
export interface SamplingContext {
  /** Prompt length (tokens). */
  promptTokens: number;
  /** The engine's maximum prompt + response length (tokens). */
  contextLength: number;
  /** Max new tokens when the request sets none; undefined means "the rest of the context" (chat, as vLLM). */
  defaultMaxTokens?: number;
  /** Stop ids the server always adds (the EOS of this route), reported as `stop_reason: null`. */
  defaultStopTokenIds: number[];
  /** "messages" (chat) or "prompt" (completions), for the error message. */
  promptWord: "messages" | "prompt";
}

/**
 * Checks the prompt fits the context with room for at least one new token, and that prompt + max_tokens fits.
 * @returns max new tokens (tokens)
 * @throws {BadRequest} (400) with vLLM's wording: "This model's maximum context length is N tokens. However, …"
 */
export function checkContext(requestedMaxTokens: number | undefined, context: SamplingContext): number {
  const { promptTokens, contextLength, promptWord } = context;
  if (promptTokens >= contextLength) {
    throw new BadRequest(
      `This model's maximum context length is ${contextLength} tokens. However, your request has ${promptTokens} ` +
        `input tokens. Please reduce the length of the ${promptWord}.`,
    );
  }
  const maxTokens = requestedMaxTokens ?? context.defaultMaxTokens ?? contextLength - promptTokens;
  if (promptTokens + maxTokens > contextLength) {
    if (requestedMaxTokens === undefined) return contextLength - promptTokens;
    throw new BadRequest(
      `This model's maximum context length is ${contextLength} tokens. However, you requested ` +
        `${promptTokens + maxTokens} tokens (${promptTokens} in the ${promptWord}, ${maxTokens} in the completion). ` +
        `Please reduce the length of the ${promptWord} or completion.`,
    );
  }
  return maxTokens;
}

/**
 * Builds the engine's sampling params of one choice.
 * @param fields - the request's sampling fields (`max_completion_tokens` wins over `max_tokens`, as in vLLM)
 * @param context - prompt length, context length and route defaults
 * @param choice - index of the choice (n > 1): choice i samples with `seed + i` so choices differ but stay reproducible
 * @throws {BadRequest} when the prompt (+ max_tokens) does not fit the context
 */
export function samplingParams(fields: SamplingFields, context: SamplingContext, choice = 0): SamplingParams {
  const requested = fields.max_completion_tokens ?? fields.max_tokens ?? undefined;
  const stop = fields.stop == null ? [] : typeof fields.stop === "string" ? [fields.stop] : fields.stop;
  const params: SamplingParams = {
    temperature: fields.temperature ?? 1,
    topP: fields.top_p ?? 1,
    topK: Math.max(0, fields.top_k ?? 0),
    maxTokens: checkContext(requested, context),
    stopTokenIds: [...context.defaultStopTokenIds, ...(fields.stop_token_ids ?? [])],
    stop,
  };
  if (fields.seed != null) params.seed = fields.seed + choice;
  return params;
}

/** vLLM's `stop_reason`: null for the route's own EOS ids and for length, else the stop id or string. */
export function wireStopReason(
  stopReason: number | string | null,
  defaultStopTokenIds: readonly number[],
): number | string | null {
  if (typeof stopReason === "number" && defaultStopTokenIds.includes(stopReason)) return null;
  return stopReason;
}
