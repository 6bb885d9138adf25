/**
 * @module What a translated API (OpenAI Responses, Anthropic Messages) hands the proxy for one call: the chat body to
 * send upstream, and how to turn vLLM's chat answer back into the agent's API. Sending and capture are the chat path's.
 */

/** A JSON object. */
export type Json = Record<string, unknown>;

/** Per-call translation of the upstream chat answer into the agent's API. */
export interface CallTranslation {
  /** `content-type` of a streamed answer (both APIs use SSE). */
  readonly streamContentType: string;
  /** The agent's body for a successful non-stream `chat.completion`. */
  body(chat: Json): Json;
  /** The agent's error body for a non-2xx answer; `upstream` is the parsed body, undefined when not JSON. */
  error(status: number, upstream: unknown): Json;
  /** SSE text for one parsed `chat.completion.chunk` (often empty). */
  chunk(chunk: Json): string;
  /** SSE text ending a completed stream, once, after `[DONE]`; `assembled` is what the proxy records. */
  end(assembled: Json | null): string;
  /** SSE text reporting a failed stream; `status` is 502, 504 or the upstream error's code. */
  streamError(message: string, status: number): string;
}

/** A translated call: the chat body to rewrite and send upstream, and how to answer the agent. */
export interface TranslatedCall {
  /** The chat completions body, before the proxy's own rewrite (model, temperature, ids, logprobs). */
  chat: Json;
  translation: CallTranslation;
}

/** One named SSE event, as the Responses and Anthropic APIs send them: `event: <type>\ndata: <json>\n\n`. */
export function namedSseEvent(type: string, data: Json): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** @returns true for a non-null, non-array object */
export function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The message of vLLM's `{error: {message}}` body, else its `detail`, else a line naming the status. */
export function upstreamErrorMessage(status: number, upstream: unknown): string {
  const error = isJson(upstream) ? upstream.error : undefined;
  if (isJson(error) && typeof error.message === "string") return error.message;
  if (isJson(upstream) && typeof upstream.detail === "string") return upstream.detail;
  return `upstream answered ${status}`;
}
