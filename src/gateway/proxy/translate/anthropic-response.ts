/**
 * @module vLLM chat completion → Anthropic Messages API `message` object and error bodies: text becomes a `text`
 * block, each tool call a `tool_use` block (id = vLLM's tool-call id, `input` = the parsed arguments);
 * `finish_reason` stop/length/tool_calls → `stop_reason` end_turn/max_tokens/tool_use (stop_sequence when a stop
 * string matched); usage counted from the token ids.
 * @see https://docs.anthropic.com/en/api/messages
 */
import { randomBytes } from "node:crypto";
import { type ChatAnswer, chatAnswerOf } from "./responses-response.js";
import { isJson, type Json } from "./translation.js";

/** @returns a `msg_…` id */
export function anthropicMessageId(): string {
  return `msg_${randomBytes(12).toString("hex")}`;
}

/**
 * Anthropic's `stop_reason` of a chat finish.
 * @param finishReason - vLLM's `finish_reason`
 * @param stopReason - vLLM's `stop_reason` (the matched stop string, a stop-token id, or null)
 * @param stopSequences - the request's `stop_sequences`
 */
export function stopReasonOf(finishReason: unknown, stopReason: unknown, stopSequences: unknown): string {
  if (finishReason === "length") return "max_tokens";
  if (finishReason === "tool_calls") return "tool_use";
  if (typeof stopReason === "string" && Array.isArray(stopSequences) && stopSequences.includes(stopReason)) {
    return "stop_sequence";
  }
  return "end_turn";
}

/** A tool call's arguments as `input`; unparsable text is kept under `_raw` rather than dropped. */
export function toolInput(args: string): Json {
  try {
    const parsed: unknown = JSON.parse(args === "" ? "{}" : args);
    return isJson(parsed) ? parsed : { _raw: args };
  } catch {
    return { _raw: args };
  }
}

/** The content blocks of an answer: its text (if any), then one `tool_use` per call. */
export function contentBlocks(answer: ChatAnswer): Json[] {
  const blocks: Json[] = [];
  if (answer.content !== null && answer.content !== "") blocks.push({ type: "text", text: answer.content });
  for (const call of answer.toolCalls) {
    blocks.push({ type: "tool_use", id: call.id, name: call.name, input: toolInput(call.arguments) });
  }
  return blocks;
}

/** Anthropic's usage object. */
export function anthropicUsage(inputTokens: number, outputTokens: number): Json {
  return {
    input_tokens: inputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: outputTokens,
  };
}

/**
 * The `message` object of a non-stream chat answer.
 * @param chat - vLLM's `chat.completion` body
 * @param request - the agent's Messages body (its `stop_sequences`)
 * @param id - the `msg_…` id
 */
export function anthropicMessage(chat: Json, request: Json, id: string): Json {
  const answer = chatAnswerOf(chat);
  const choice = Array.isArray(chat.choices) && isJson(chat.choices[0]) ? chat.choices[0] : {};
  const stopReason = stopReasonOf(answer.finishReason, choice.stop_reason, request.stop_sequences);
  return {
    id,
    type: "message",
    role: "assistant",
    model: chat.model ?? request.model,
    content: contentBlocks(answer),
    stop_reason: stopReason,
    stop_sequence: stopReason === "stop_sequence" ? choice.stop_reason : null,
    usage: anthropicUsage(answer.promptTokens, answer.outputTokens),
  };
}
