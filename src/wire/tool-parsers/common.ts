/** @module The shapes every tool-call parser shares: a parsed call, a parser, the call id vLLM writes. */
import { randomBytes } from "node:crypto";

/** One parsed tool call, OpenAI/vLLM wire shape. */
export interface WireToolCall {
  /** `chatcmpl-tool-<16 hex>`. */
  id: string;
  type: "function";
  function: {
    name: string;
    /** The arguments as JSON text, re-serialised with `", "` and `": "` separators (Python `json.dumps`). */
    arguments: string;
  };
}

/** What a parser made of a generation. */
export interface ParsedToolCalls {
  /** Text before the first call, or null when blank; the whole text when no call was parsed. */
  content: string | null;
  /** Every parsed call, in order; empty when the text has none or any is malformed. */
  toolCalls: WireToolCall[];
}

/** The strings around a tool-call block in generated text (the chat template's delimiter ids, decoded). */
export interface ToolCallMarkers {
  start: string;
  end: string;
}

/** One tool-call format. */
export interface ToolCallParser {
  /** vLLM's `--tool-call-parser` name. */
  readonly name: string;
  /** Parses a generation (specials as strings, stop token removed); `qwen3_coder` reads types from `tools`. */
  parse(text: string, tools?: readonly ChatTool[]): ParsedToolCalls;
}

/** One entry of a chat request's `tools`, as far as parsers read it. */
export interface ChatTool {
  type?: unknown;
  function?: { name?: unknown; parameters?: unknown };
}

/** A fresh tool call id, `chatcmpl-tool-` + 16 hex digits (vLLM's format). */
export function toolCallId(): string {
  return `chatcmpl-tool-${randomBytes(8).toString("hex")}`;
}

/** Everything as content, no calls: what every parser answers for text it cannot read. */
export function noToolCalls(text: string): ParsedToolCalls {
  return { content: text, toolCalls: [] };
}

/** A call of a name and arguments text, with a fresh vLLM id. */
export function wireToolCall(name: string, args: string, id: string = toolCallId()): WireToolCall {
  return { id, type: "function", function: { name, arguments: args } };
}
