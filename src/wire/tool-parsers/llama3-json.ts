/**
 * @module vLLM's `llama3_json` parser: `{"name": …, "parameters": {…}}` objects, optionally after `<|python_tag|>`.
 * @see vLLM `vllm/tool_parsers/llama_tool_parser.py`
 */
import { pythonJsonDumps } from "../python-json.js";
import { noToolCalls, type ParsedToolCalls, type WireToolCall, wireToolCall } from "./common.js";

/** The index past the object at `start` by brace matching outside strings (the span `raw_decode` reads), or -1. */
export function jsonObjectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i += 1) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i += 1;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") depth += 1;
    else if (ch === "}" || ch === "]") {
      depth -= 1;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** The call in one decoded object; undefined when `name` is missing or not a string, or neither arguments key is. */
function callOf(object: Record<string, unknown>): WireToolCall | undefined {
  const { name } = object;
  if (typeof name !== "string") return undefined;
  const args = Object.hasOwn(object, "arguments") ? object.arguments : object.parameters;
  if (!Object.hasOwn(object, "arguments") && !Object.hasOwn(object, "parameters")) return undefined;
  return wireToolCall(name, pythonJsonDumps(args));
}

/**
 * Every top-level JSON object is a call, all or nothing (as vLLM); text around them is dropped.
 * @example `<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}` → one call, content null
 */
export function parseLlama3JsonToolCalls(text: string): ParsedToolCalls {
  if (!text.includes("<|python_tag|>") && !text.includes("{")) return noToolCalls(text);
  const calls: WireToolCall[] = [];
  let end = -1;
  for (let start = text.indexOf("{"); start >= 0; start = text.indexOf("{", start + 1)) {
    if (start <= end) continue;
    const objectEnd = jsonObjectEnd(text, start);
    if (objectEnd < 0) return noToolCalls(text);
    let object: unknown;
    try {
      object = JSON.parse(text.slice(start, objectEnd));
    } catch {
      return noToolCalls(text);
    }
    const call = callOf(object as Record<string, unknown>);
    if (call === undefined) return noToolCalls(text);
    calls.push(call);
    // vLLM skips every `{` up to and including the index just past the object (so `}{` starts no new call).
    end = objectEnd;
  }
  return calls.length > 0 ? { content: null, toolCalls: calls } : noToolCalls(text);
}
