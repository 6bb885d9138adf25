/**
 * @module vLLM's `deepseek_v3` tool-call parser: DeepSeek-V3 writes its calls between `<｜tool▁calls▁begin｜>` and
 * `<｜tool▁calls▁end｜>`, each as `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>`.
 * @see vLLM `vllm/tool_parsers/deepseekv3_tool_parser.py` (`DeepSeekV3ToolParser.extract_tool_calls`)
 */
import { noToolCalls, type ParsedToolCalls, wireToolCall } from "./common.js";

/** Opens the block of calls. */
export const DEEPSEEK_V3_CALLS_BEGIN = "<｜tool▁calls▁begin｜>";

/**
 * One call, vLLM's regex with Python's `.` (anything but `\n`): type, name and arguments each on one line, greedy.
 */
const CALL = /<｜tool▁call▁begin｜>([^\n]*)<｜tool▁sep｜>([^\n]*)\n```json\n([^\n]*)\n```<｜tool▁call▁end｜>/g;

/**
 * Parses a DeepSeek-V3 generation. The arguments are taken as written, not re-serialised (vLLM passes the text
 * through). A call whose type is not `function` fails the whole parse (vLLM's `ToolCall` accepts only that type).
 * Content is the text before `<｜tool▁calls▁begin｜>`, null when empty; with the marker but no well-formed call, that
 * content comes back with no calls (vLLM does the same).
 * @param text - the generated text with the special tokens written as their strings
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
