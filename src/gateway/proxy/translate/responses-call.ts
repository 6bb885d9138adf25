/**
 * @module One OpenAI Responses API call over the chat path: the request translated to chat, the chat answer
 * translated back (JSON or SSE), and the served response kept for `previous_response_id` unless `store: false`.
 */
import type { ResponseHistory } from "./response-history.js";
import { responsesToChat } from "./responses-request.js";
import { assistantMessage, type ChatAnswer, chatAnswerOf, ResponsesIds, responseObject } from "./responses-response.js";
import { ResponsesStreamWriter } from "./responses-stream.js";
import { type Json, type TranslatedCall, upstreamErrorMessage } from "./translation.js";

/**
 * vLLM's error body is already OpenAI's `{error: {message, type, param, code}}`; anything else is wrapped so, its
 * message read as `translation.ts`'s {@link upstreamErrorMessage} reads it.
 */
function openaiError(status: number, upstream: unknown): Json {
  const error = (upstream as { error?: unknown } | undefined)?.error;
  if (typeof error === "object" && error !== null) return upstream as Json;
  const message = upstreamErrorMessage(status, upstream);
  return {
    error: { message, type: status >= 500 ? "server_error" : "invalid_request_error", param: null, code: status },
  };
}

/**
 * Translates one Responses call.
 * @param body - the agent's `POST /responses` body
 * @param rolloutId - the calling rollout
 * @param history - served responses (read for `previous_response_id`, written after a successful answer)
 * @returns the chat body and the translation of the answer
 * @throws {BadRequest} / {NotFound} from {@link responsesToChat}
 */
export function translateResponsesCall(body: Json, rolloutId: string, history: ResponseHistory): TranslatedCall {
  const { chat, conversation } = responsesToChat(body, rolloutId, history);
  const ids = new ResponsesIds();
  const writer = new ResponsesStreamWriter(body, ids);
  const keep = (answer: ChatAnswer, response: Json): void => {
    if (body.store === false) return;
    const items = new Map<string, Json>();
    for (const item of response.output as Json[]) {
      if (item.type === "message") items.set(String(item.id), { role: "assistant", content: answer.content ?? "" });
      else {
        const call = { id: item.call_id, type: "function", function: { name: item.name, arguments: item.arguments } };
        items.set(String(item.id), { role: "assistant", content: null, tool_calls: [call] });
      }
    }
    history.put(ids.responseId, { rolloutId, conversation: [...conversation, assistantMessage(answer)], items });
  };
  return {
    chat,
    translation: {
      streamContentType: "text/event-stream; charset=utf-8",
      body(chatBody) {
        const answer = chatAnswerOf(chatBody);
        const created = typeof chatBody.created === "number" ? chatBody.created : Math.floor(Date.now() / 1000);
        const response = responseObject(body, ids, chatBody.model ?? body.model, created, answer);
        keep(answer, response);
        return response;
      },
      error: openaiError,
      chunk: (chunk) => writer.chunk(chunk),
      end(assembled) {
        const { text, response, answer } = writer.end(assembled);
        keep(answer, response);
        return text;
      },
      streamError: (message, status) => writer.error(message, status),
    },
  };
}
