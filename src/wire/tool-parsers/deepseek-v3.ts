/**
 * @module vLLM's `deepseek_v3` parser:
 * `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>`.
 * @see vLLM `vllm/tool_parsers/deepseekv3_tool_parser.py`
 */
import { noToolCalls, type ParsedToolCalls, wireToolCall } from "./common.js";

/** Opens the block of calls. */
export const DEEPSEEK_V3_CALLS_BEGIN = "<｜tool▁calls▁begin｜>";

/**
 * One call, vLLM's regex with Python's `.` (anything but `\n`): type, name and arguments each on one line, greedy.
 */
const CALL = /<｜tool▁call▁begin｜>([^\n]*)<｜tool▁sep｜>([^\n]*)\n```json\n([^\n]*)\n```<｜tool▁call▁end｜>/g;

/**
 * Arguments are passed through as written; a non-`function` call fails the whole parse, and a marker without a
 * well-formed call returns the content before it with no calls, all as vLLM does.
 */
export function parseDeepSeekV3ToolCalls(text: string): ParsedToolCalls {
  const begin = text.indexOf(DEEPSEEK_V3_CALLS_BEGIN);
  if (begin < 0) return noToolCalls(text);
  const matches = [...text.matchAll(CALL)];
  if (matches.some((match) => match[1] !== "function")) return noToolCalls(text);
  const content = text.slice(0, begin);
  return {
    content: content === "" ? null : content,
    toolCalls: matches.map((match) => wireToolCall(match[2]!, match[3]!)),
  };
}
