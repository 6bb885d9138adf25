/** @module Tool-call parsers by vLLM `--tool-call-parser` name; `hermes` here, the others in `tool-parsers/`. */
import { pythonJsonDumps } from "./python-json.js";
import {
  type ParsedToolCalls,
  type ToolCallMarkers,
  type ToolCallParser,
  toolCallId,
  type WireToolCall,
} from "./tool-parsers/common.js";
import { parseDeepSeekV3ToolCalls } from "./tool-parsers/deepseek-v3.js";
import { parseLlama3JsonToolCalls } from "./tool-parsers/llama3-json.js";
import { parseMistralToolCalls } from "./tool-parsers/mistral.js";
import { parsePythonicToolCalls } from "./tool-parsers/pythonic.js";
import { parseQwen3CoderToolCalls } from "./tool-parsers/qwen3-coder.js";

/** The parser types, defined in `tool-parsers/common.ts`. */
export type {
  ChatTool,
  ParsedToolCalls,
  ToolCallMarkers,
  ToolCallParser,
  WireToolCall,
} from "./tool-parsers/common.js";
/** A fresh vLLM-format tool call id. */
export { toolCallId } from "./tool-parsers/common.js";

/** Hermes markers: `<tool_call>` and `</tool_call>`. */
export const HERMES_MARKERS: ToolCallMarkers = { start: "<tool_call>", end: "</tool_call>" };

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
 * Parses every Hermes block, all or nothing: one malformed block leaves the text as content with no calls (as vLLM).
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
  llama3_json: { name: "llama3_json", parse: parseLlama3JsonToolCalls },
  qwen3_coder: { name: "qwen3_coder", parse: parseQwen3CoderToolCalls },
  mistral: { name: "mistral", parse: parseMistralToolCalls },
  deepseek_v3: { name: "deepseek_v3", parse: parseDeepSeekV3ToolCalls },
  pythonic: { name: "pythonic", parse: parsePythonicToolCalls },
};

/** The parser of a vLLM `--tool-call-parser` name. @throws {RangeError} listing the known names */
export function toolCallParser(name: string): ToolCallParser {
  const parser = Object.hasOwn(TOOL_CALL_PARSERS, name) ? TOOL_CALL_PARSERS[name] : undefined;
  if (parser === undefined) {
    throw new RangeError(`no tool-call parser "${name}" (known: ${Object.keys(TOOL_CALL_PARSERS).join(", ")})`);
  }
  return parser;
}
