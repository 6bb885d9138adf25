/**
 * @module What a translated API (OpenAI Responses, Anthropic Messages) hands the proxy for one call: the chat
 * completions body to send upstream and the functions that turn vLLM's chat answer back into the agent's API. The
 * upstream call, its retries and its capture are the chat path's, unchanged, so a call is recorded the same whichever
 * API the agent used.
 */

/** A JSON object. */
export type Json = Record<string, unknown>;

/** Per-call translation of the upstream chat answer into the agent's API. */
export interface CallTranslation {
  /** `content-type` of a streamed answer (both APIs use SSE). */
  readonly streamContentType: string;
  /**
   * The agent's body for a successful non-stream chat answer.
   * @param chat - vLLM's `chat.completion` body
   */
  body(chat: Json): Json;
  /**
   * The agent's error body for a non-2xx upstream answer.
   * @param status - the upstream HTTP status
   * @param upstream - the parsed upstream body (vLLM's `{error: {...}}`), or undefined when it was not JSON
   */
  error(status: number, upstream: unknown): Json;
  /**
   * SSE text for one parsed upstream chunk (often empty).
   * @param chunk - one `chat.completion.chunk` (usage chunks included)
   */
  chunk(chunk: Json): string;
  /**
   * SSE text ending a stream that completed; called once, after `[DONE]`.
   * @param assembled - the stream assembled into its non-stream body (what the proxy records), null if empty
   */
  end(assembled: Json | null): string;
  /**
   * SSE text reporting a stream that failed (upstream error event, break, or no `[DONE]`).
   * @param message - what went wrong
   * @param status - the HTTP-like status of the failure (502, 504, or the upstream error's code)
   */
  streamError(message: string, status: number): string;
}

/** A translated call: the chat body to rewrite and send upstream, and how to answer the agent. */
export interface TranslatedCall {
  /** The chat completions body, before the proxy's own rewrite (model, temperature, ids, logprobs). */
  chat: Json;
  translation: CallTranslation;
}

/**
 * One named SSE event, as the Responses and Anthropic APIs send them.
 * @param type - the event name, also the payload's `type`
 * @param data - the payload
 * @returns `event: <type>\ndata: <json>\n\n`
 */
export function namedSseEvent(type: string, data: Json): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** @returns true for a non-null, non-array object */
export function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The message of vLLM's `{error: {message}}` body, else a `detail` (FastAPI's, or the text or detail the proxy put in place of a body that is not JSON), else a generic line with the status. */
export function upstreamErrorMessage(status: number, upstream: unknown): string {
  const error = isJson(upstream) ? upstream.error : undefined;
  if (isJson(error) && typeof error.message === "string") return error.message;
  if (isJson(upstream) && typeof upstream.detail === "string") return upstream.detail;
  return `upstream answered ${status}`;
}
