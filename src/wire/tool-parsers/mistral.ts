/**
 * @module vLLM's `mistral` parser for a Hugging Face tokenizer (pre-v11 format): `content[TOOL_CALLS] [{…}, …]`.
 * @see vLLM `vllm/tool_parsers/mistral_tool_parser.py`
 */
import { randomInt } from "node:crypto";
import { pythonJsonDumps } from "../python-json.js";
import { noToolCalls, type ParsedToolCalls, type WireToolCall, wireToolCall } from "./common.js";

/** The tool-call token Mistral writes before its calls. */
export const MISTRAL_TOOL_CALLS = "[TOOL_CALLS]";

const ALPHANUMERIC = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/** A Mistral tool call id: 9 letters and digits (what `mistral_common` accepts and vLLM writes). */
export function mistralToolCallId(): string {
  return Array.from({ length: 9 }, () => ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]).join("");
}

/** The calls of a decoded list; undefined when it is not a list of `{name: string, arguments}` objects. */
function callsOf(list: unknown, reserialise: boolean): WireToolCall[] | undefined {
  if (!Array.isArray(list)) return undefined;
  const calls: WireToolCall[] = [];
  for (const item of list) {
    if (item === null || typeof item !== "object" || Array.isArray(item)) return undefined;
    const { name, arguments: args } = item as { name?: unknown; arguments?: unknown };
    if (typeof name !== "string" || !Object.hasOwn(item, "arguments")) return undefined;
    // Without re-serialising (vLLM's fallback path) only arguments already written as a string are accepted.
    if (!reserialise && typeof args !== "string") return undefined;
    calls.push(wireToolCall(name, reserialise ? pythonJsonDumps(args) : (args as string), mistralToolCallId()));
  }
  return calls;
}

function decode(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * After one `[TOOL_CALLS]` a JSON list of calls; failing that, the first greedy `[{…}]` span, then the text as
 * content (as vLLM). Where vLLM raises (two markers, a bad call), the whole text is content. Ids: 9 alphanumerics.
 */
export function parseMistralToolCalls(text: string): ParsedToolCalls {
  const parts = text.split(MISTRAL_TOOL_CALLS);
  if (parts.length === 1) return noToolCalls(text);
  if (parts.length !== 2) return noToolCalls(text);
  const before = parts[0]!;
  const raw = parts[1]!.trim();
  const content = before === "" ? null : before;
  const direct = decode(raw);
  if (direct.ok) {
    const calls = callsOf(direct.value, true);
    return calls === undefined ? noToolCalls(text) : { content, toolCalls: calls };
  }
  const span = /\[\{[\s\S]*\}\]/.exec(raw)?.[0];
  const fallback = span === undefined ? { ok: false as const } : decode(span);
  if (!fallback.ok) return { content: raw, toolCalls: [] };
  const calls = callsOf(fallback.value, false);
  return calls === undefined ? noToolCalls(text) : { content, toolCalls: calls };
}
