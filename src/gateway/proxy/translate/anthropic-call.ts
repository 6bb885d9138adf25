/** @module One Anthropic Messages API call over the chat path: request to chat, chat answer back (JSON or SSE). */

import { anthropicErrorBody } from "../../../wire/error-bodies.js";
import { anthropicToChat } from "./anthropic-request.js";
import { anthropicMessage, anthropicMessageId } from "./anthropic-response.js";
import { AnthropicStreamWriter } from "./anthropic-stream.js";
import { type Json, type TranslatedCall, upstreamErrorMessage } from "./translation.js";

/**
 * Translates one Messages call.
 * @param body - the agent's `POST /v1/messages` body
 * @returns the chat body and the translation of the answer
 * @throws {BadRequest} from {@link anthropicToChat}
 */
export function translateAnthropicCall(body: Json): TranslatedCall {
  const chat = anthropicToChat(body);
  const id = anthropicMessageId();
  const writer = new AnthropicStreamWriter(body, id);
  return {
    chat,
    translation: {
      streamContentType: "text/event-stream; charset=utf-8",
      body: (chatBody) => anthropicMessage(chatBody, body, id),
      error: (status, upstream) => anthropicErrorBody(status, upstreamErrorMessage(status, upstream)),
      chunk: (chunk) => writer.chunk(chunk),
      end: (assembled) => writer.end(assembled),
      streamError: (message, status) => writer.error(message, status),
    },
  };
}
