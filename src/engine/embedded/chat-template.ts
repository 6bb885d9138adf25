/**
 * @module The chat template of the embedded engine (`ChatMLTemplate`, a `ChatTemplate`): THE single place a chat
 * (messages + tools) becomes prompt token ids. ChatML-like, compact (the tiny model's context is ~256 tokens), special tokens emitted as their ids.
 */
import { type ChatMessage, type ChatTool, type ChatToolCall, contentText } from "../../wire/chat.js";
import type { ChatTemplate, RenderOptions, ToolCallDelimiters } from "../chat-template.js";
import type { ByteTokenizer, SpecialToken } from "./tokenizer.js";

/** A piece of a rendered prompt: plain text (encoded as bytes) or a special token (one id). */
type Piece = string | { special: SpecialToken };

/**
 * The canonical text of one tool call inside `<tool_call>…</tool_call>`: `{"name": NAME, "arguments": ARGS}` with NAME
 * JSON-encoded and ARGS the arguments string verbatim. The server's tool-call parser re-serialises parsed arguments
 * in the same `", "`/`": "` style (Python `json.dumps`, as vLLM's Hermes parser does), so a call the model wrote in this
 * canonical form renders back to exactly the ids it generated.
 */
export function toolCallText(call: ChatToolCall): string {
  return `{"name": ${JSON.stringify(call.function.name)}, "arguments": ${call.function.arguments}}`;
}

/** One tool as one compact line: `{"name": …, "description": …, "parameters": …}` (absent fields left out). */
function toolLine(tool: ChatTool): string {
  const { name, description, parameters } = tool.function;
  return JSON.stringify({ name, description, parameters });
}

/** The system turn's text: the system message (if any), then the tools block. */
function systemText(system: string | undefined, tools: ChatTool[]): string | undefined {
  if (tools.length === 0) return system;
  const block = `Tools:\n${tools.map(toolLine).join("\n")}`;
  return system === undefined || system === "" ? block : `${system}\n${block}`;
}

/** The pieces of one turn: `<|im_start|>{role}\n{content}<|im_end|>\n`, tool calls after the content. */
function turnPieces(role: string, content: string, toolCalls: ChatToolCall[] = []): Piece[] {
  const pieces: Piece[] = [{ special: "<|im_start|>" }, `${role}\n${content}`];
  for (const call of toolCalls)
    pieces.push({ special: "<tool_call>" }, toolCallText(call), { special: "</tool_call>" });
  pieces.push({ special: "<|im_end|>" }, "\n");
  return pieces;
}

/** The role name a message renders with: `developer` is a system turn (as OpenAI and vLLM treat it). */
function turnRole(role: ChatMessage["role"]): string {
  return role === "developer" ? "system" : role;
}

/** Renders a chat to pieces (see {@link renderChatML}). */
function chatPieces(messages: readonly ChatMessage[], options: RenderOptions): Piece[] {
  const tools = options.tools ?? [];
  const first = messages[0];
  const leadingSystem = first && turnRole(first.role) === "system" ? contentText(first.content) : undefined;
  const pieces: Piece[] = [];
  const system = systemText(leadingSystem, tools);
  if (system !== undefined) pieces.push(...turnPieces("system", system));
  const rest = leadingSystem === undefined ? messages : messages.slice(1);
  for (const message of rest)
    pieces.push(...turnPieces(turnRole(message.role), contentText(message.content), message.tool_calls));
  if (options.addGenerationPrompt ?? true) pieces.push({ special: "<|im_start|>" }, "assistant\n");
  return pieces;
}

/**
 * Renders a chat to prompt token ids.
 *
 * Format, per message: `<|im_start|>{role}\n{content}<|im_end|>\n`; `<|im_start|>`, `<|im_end|>`, `<tool_call>` and
 * `</tool_call>` are single special ids, everything else is UTF-8 bytes (so a user writing the text "<|im_end|>"
 * produces bytes, never the special id). A `developer` message (OpenAI's newer system role) renders exactly as a
 * `system` one. A leading system message and the tools share one system turn; each tool is one JSON line. An assistant message renders its content, then each tool call as
 * `<tool_call>{"name": NAME, "arguments": ARGS}</tool_call>` with ARGS verbatim (see {@link toolCallText}), so
 * re-rendering a turn the model generated reproduces its ids. The generation prompt is `<|im_start|>assistant\n`;
 * the model ends its turn with `<|im_end|>`.
 *
 * Worked example (specials written as their strings, `⏎` = newline): messages
 * `[{role: "user", content: "2+2?"}, {role: "assistant", content: null, tool_calls: [{function: {name: "calc",
 * arguments: "{\"x\": \"2+2\"}"}}]}, {role: "tool", content: "4"}]` with tools `[{function: {name: "calc"}}]` render as
 * ```text
 * <|im_start|>system⏎Tools:⏎{"name":"calc"}<|im_end|>⏎
 * <|im_start|>user⏎2+2?<|im_end|>⏎
 * <|im_start|>assistant⏎<tool_call>{"name": "calc", "arguments": {"x": "2+2"}}</tool_call><|im_end|>⏎
 * <|im_start|>tool⏎4<|im_end|>⏎
 * <|im_start|>assistant⏎
 * ```
 * (the line breaks after each `⏎` are for reading only).
 * @param tokenizer - the byte tokenizer whose special ids are emitted
 * @param messages - the chat, oldest first
 * @param options - tools and whether to add the generation prompt (default true)
 * @returns prompt token ids, [promptLen]
 * @see https://github.com/openai/openai-python/blob/main/chatml.md (ChatML)
 */
export function renderChatML(
  tokenizer: ByteTokenizer,
  messages: readonly ChatMessage[],
  options: RenderOptions = {},
): number[] {
  const ids: number[] = [];
  for (const piece of chatPieces(messages, options)) {
    if (typeof piece === "string") ids.push(...tokenizer.encode(piece));
    else ids.push(tokenizer.specialId(piece.special));
  }
  return ids;
}

/** The embedded engine's {@link ChatTemplate}: {@link renderChatML} over the byte tokenizer's ChatML special ids. */
export class ChatMLTemplate implements ChatTemplate {
  /** `<|im_end|>` then `<|endoftext|>`. */
  readonly stopTokenIds: readonly number[];
  /** `<tool_call>` … `</tool_call>`. */
  readonly toolCalls: ToolCallDelimiters;

  /** @param tokenizer - the byte tokenizer whose special ids are emitted */
  constructor(private readonly tokenizer: ByteTokenizer) {
    this.stopTokenIds = [tokenizer.imEndId, tokenizer.eosId];
    this.toolCalls = { startId: tokenizer.toolCallStartId, endId: tokenizer.toolCallEndId };
  }

  /** Renders a chat to prompt token ids, [promptLen] (see {@link renderChatML}). */
  render(messages: readonly ChatMessage[], options: RenderOptions = {}): number[] {
    return renderChatML(this.tokenizer, messages, options);
  }
}
