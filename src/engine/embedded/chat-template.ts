/**
 * @module The embedded engine's ChatML-like chat template: the single place a chat becomes prompt ids, compact for a
 * ~256-token context, special tokens emitted as their ids.
 */
import { type ChatMessage, type ChatTool, type ChatToolCall, contentText } from "../../wire/chat.js";
import type { ChatTemplate, RenderOptions, ToolCallDelimiters } from "../chat-template.js";
import type { ByteTokenizer, SpecialToken } from "./tokenizer.js";

/** A piece of a rendered prompt: plain text (encoded as bytes) or a special token (one id). */
type Piece = string | { special: SpecialToken };

/**
 * A tool call's canonical text, arguments verbatim: the server's parser re-serialises in Python `json.dumps` style
 * (as vLLM's Hermes parser), so a call generated in this form re-renders to the same ids.
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
 * Renders a chat to prompt token ids: `<|im_start|>{role}\n{content}<|im_end|>\n` per message, the specials as single
 * ids and everything else as UTF-8 bytes (typed "<|im_end|>" stays bytes). `developer` renders as `system`; a leading
 * system message and the tools share one turn.
 *
 * Example (`⏎` = newline): user "2+2?", an assistant call of `calc` with `{"x": "2+2"}`, tool "4", tools `[calc]`:
 * ```text
 * <|im_start|>system⏎Tools:⏎{"name":"calc"}<|im_end|>⏎
 * <|im_start|>user⏎2+2?<|im_end|>⏎
 * <|im_start|>assistant⏎<tool_call>{"name": "calc", "arguments": {"x": "2+2"}}</tool_call><|im_end|>⏎
 * <|im_start|>tool⏎4<|im_end|>⏎
 * <|im_start|>assistant⏎
 * ```
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
