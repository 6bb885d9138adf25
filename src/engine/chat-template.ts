/**
 * @module The `ChatTemplate` interface an engine provides beside `Engine` and its `Tokenizer`: messages + tools →
 * prompt ids, the ids that end an assistant turn, and the ids that delimit a generated tool call. The engine server
 * renders chats and parses tool calls through it only; `embedded/chat-template.ts` is the ChatML implementation.
 */

import type { ChatMessage, ChatTool } from "../wire/chat.js";

/** The chat wire types, re-exported for engine implementations. */
export type { ChatMessage, ChatTool, ChatToolCall } from "../wire/chat.js";

/** What to render besides the messages. */
export interface RenderOptions {
  /** Tools the model may call, rendered into the prompt. */
  tools?: ChatTool[];
  /** End with the opening of an assistant turn so the model writes it (default true). */
  addGenerationPrompt?: boolean;
}

/**
 * How a model writes tool calls: Hermes blocks, `START {"name": …, "arguments": {…}} END`, where START and END are
 * single special ids. The engine server parses the JSON between them (as vLLM's `--tool-call-parser hermes`).
 */
export interface ToolCallDelimiters {
  /** Id opening a tool-call block. */
  startId: number;
  /** Id closing a tool-call block. */
  endId: number;
}

/** One engine's chat format. */
export interface ChatTemplate {
  /**
   * Renders a chat to prompt token ids.
   * @param messages - the chat, oldest first
   * @param options - tools and whether to add the generation prompt (default true)
   * @returns prompt token ids, [promptLen]
   */
  render(messages: readonly ChatMessage[], options?: RenderOptions): number[];
  /** Ids that end an assistant turn: the default stop ids of a chat request, reported as `stop_reason: null`. */
  readonly stopTokenIds: readonly number[];
  /** The special ids around a generated tool call. */
  readonly toolCalls: ToolCallDelimiters;
}
