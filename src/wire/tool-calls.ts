/**
 * @module Tool-call parsers of generated text, by vLLM's `--tool-call-parser` name: each turns a generation into
 * OpenAI `tool_calls`. `hermes` (`<tool_call>{"name": …, "arguments": {…}}</tool_call>` blocks) is implemented;
 * another format is one more entry in {@link TOOL_CALL_PARSERS}.
 */
import { randomBytes } from "node:crypto";
import { pythonJsonDumps } from "./python-json.js";

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
  /**
   * Parses a whole generation.
   * @param text - the generated text, special tokens written as their strings, the stop token removed
   */
  parse(text: string): ParsedToolCalls;
}

/** Hermes markers: `<tool_call>` and `</tool_call>`. */
export const HERMES_MARKERS: ToolCallMarkers = { start: "<tool_call>", end: "</tool_call>" };

/** A fresh tool call id, `chatcmpl-tool-` + 16 hex digits (vLLM's format). */
export function toolCallId(): string {
  return `chatcmpl-tool-${randomBytes(8).toString("hex")}`;
}

/** Parses one Hermes block's JSON into a call, or undefined when it is not `{"name": string, "arguments"?: …}`. */
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

/** The bodies of the blocks from `first` on; undefined when a block is unterminated. */
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
 * Parses every Hermes block of a generation, all or nothing: one malformed or unterminated block leaves the whole
 * text as content with no calls (as vLLM's Hermes parser does).
 * @param text - the generated text with the tool-call specials written as their strings and the stop token removed
 * @param markers - the block delimiters as written in `text` (default `<tool_call>` / `</tool_call>`)
 * @returns content (text before the first block, null when blank) and the calls; `{content: text, toolCalls: []}` when
 *   nothing parsed
 * @see vLLM `vllm/tool_parsers/hermes_tool_parser.py` (`extract_tool_calls`)
 */
export function parseHermesToolCalls(text: string, markers: ToolCallMarkers = HERMES_MARKERS): ParsedToolCalls {
  const first = text.indexOf(markers.start);
  if (first < 0) return { content: text, toolCalls: [] };
  const calls = blockBodies(text, first, markers)?.map((body) => parseToolCallBlock(body.trim()));
  if (calls === undefined || calls.some((call) => call === undefined)) return { content: text, toolCalls: [] };
  const before = text.slice(0, first);
  return { content: before.trim() === "" ? null : before, toolCalls: calls as WireToolCall[] };
}

/** The parsers, keyed by vLLM's `--tool-call-parser` names. */
export const TOOL_CALL_PARSERS: Readonly<Record<string, ToolCallParser>> = {
  hermes: { name: "hermes", parse: (text) => parseHermesToolCalls(text) },
};

/**
 * The parser of a name.
 * @param name - a vLLM `--tool-call-parser` name, e.g. `hermes`
 * @throws {RangeError} for a name with no parser here (the message lists the known ones)
 */
export function toolCallParser(name: string): ToolCallParser {
  const parser = Object.hasOwn(TOOL_CALL_PARSERS, name) ? TOOL_CALL_PARSERS[name] : undefined;
  if (parser === undefined) {
    throw new RangeError(`no tool-call parser "${name}" (known: ${Object.keys(TOOL_CALL_PARSERS).join(", ")})`);
  }
  return parser;
}
