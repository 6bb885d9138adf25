/**
 * @module Hermes-style tool-call parsing of generated text, as vLLM's `--tool-call-parser hermes` does:
 * `<tool_call>{"name": …, "arguments": {…}}</tool_call>` blocks become OpenAI `tool_calls`.
 */
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

/** What the parser made of a generation. */
export interface ParsedToolCalls {
  /** Text before the first block, or null when blank; the whole text when no call was parsed. */
  content: string | null;
  /** Every parsed call, in order; empty when the text has no blocks or any block is malformed. */
  toolCalls: WireToolCall[];
}

/** The strings around a tool-call block in generated text (the chat template's delimiter ids, decoded). */
export interface ToolCallMarkers {
  start: string;
  end: string;
}

/** Hermes markers: `<tool_call>` and `</tool_call>`. */
export const HERMES_MARKERS: ToolCallMarkers = { start: "<tool_call>", end: "</tool_call>" };

/** A fresh tool call id, `chatcmpl-tool-` + 16 hex digits (vLLM's format). */
export function toolCallId(): string {
  return `chatcmpl-tool-${randomBytes(8).toString("hex")}`;
}

/**
 * Serialises a JSON value as Python's `json.dumps(value, ensure_ascii=False)` does: `", "` between items, `": "`
 * after keys, non-ASCII kept raw. (Numbers print as JavaScript prints them, so `1.0` comes back as `1`.)
 * @param value - a value produced by `JSON.parse`
 * @returns its JSON text
 * @see https://docs.python.org/3/library/json.html#json.dumps
 */
export function pythonJsonDumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    const items = Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${pythonJsonDumps(item)}`);
    return `{${items.join(", ")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Parses one block's JSON into a call, or undefined when it is not `{"name": string, "arguments"?: …}`. */
export function parseToolCallBlock(json: string): WireToolCall | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
  const { name, arguments: args } = parsed as { name?: unknown; arguments?: unknown };
  if (typeof name !== "string") return undefined;
  return { id: toolCallId(), type: "function", function: { name, arguments: pythonJsonDumps(args ?? {}) } };
}

/** Splits text into the `<tool_call>` block bodies; undefined when a block is unterminated. */
function blockBodies(text: string, first: number, markers: ToolCallMarkers): string[] | undefined {
  const bodies: string[] = [];
  const { start, end } = markers;
  let at = first;
  while (at >= 0) {
    const close = text.indexOf(end, at + start.length);
    if (close < 0) return undefined;
    bodies.push(text.slice(at + start.length, close));
    at = text.indexOf(start, close + end.length);
  }
  return bodies;
}

/**
 * Parses every `<tool_call>{json}</tool_call>` block of a generation, all or nothing: one malformed or unterminated
 * block leaves the whole text as content with no calls (as vLLM's Hermes parser does).
 * @param text - the generated text with the tool-call specials written as their strings and the stop token removed
 * @param markers - the block delimiters as written in `text` (default `<tool_call>` / `</tool_call>`)
 * @returns content (text before the first block, null when blank) and the calls; `{content: text, toolCalls: []}` when
 *   nothing parsed
 * @see vLLM `vllm/tool_parsers/hermes_tool_parser.py` (`extract_tool_calls`)
 */
export function parseToolCalls(text: string, markers: ToolCallMarkers = HERMES_MARKERS): ParsedToolCalls {
  const first = text.indexOf(markers.start);
  if (first < 0) return { content: text, toolCalls: [] };
  const bodies = blockBodies(text, first, markers);
  const calls = bodies?.map((body) => parseToolCallBlock(body.trim()));
  if (calls === undefined || calls.some((call) => call === undefined)) return { content: text, toolCalls: [] };
  const before = text.slice(0, first);
  return { content: before.trim() === "" ? null : before, toolCalls: calls as WireToolCall[] };
}
