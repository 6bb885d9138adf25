/**
 * @module Semantic equality of chat messages, as `tito` uses it to recognise the turns an agent sends back: the same
 * conversation re-serialised by a framework counts as the same conversation.
 *
 * Rules (each from a framework seen doing it):
 * 1. Roles are equal, `developer` ≡ `system`.
 * 2. Text is the `content` string or its text parts joined; `null`, absent and `""` are equal (LangChain sends an
 *    assistant's `null` back as `""`). Leading and trailing whitespace is ignored (templates strip it; some
 *    frameworks trim); whitespace inside the text must match exactly.
 * 3. An assistant's leading `<think>…</think>` block is ignored (Qwen3's template strips it from history and some
 *    frameworks drop it or move it to `reasoning_content`).
 * 4. Tool calls: same number, in order, same function name, arguments equal as parsed JSON (key order and spacing
 *    ignored: `{"a": 1}` ≡ `{"a":1}`); arguments that are not JSON compare as trimmed text. Call ids and `type` are
 *    ignored (the template does not render them).
 * 5. A tool message's `tool_call_id` and `name` are ignored (the template renders only its content, in order).
 * 6. Tools: equal as JSON values (key order ignored); absent, `null` and `[]` are equal.
 */
import { isDeepStrictEqual } from "node:util";
import { contentText } from "../../../wire/chat.js";

type Json = Record<string, unknown>;

const THINK = /^\s*<think>[\s\S]*?<\/think>/;

/** A message's comparable text (rules 2, 3). */
function messageText(message: Json): string {
  const text = contentText(message.content);
  return (message.role === "assistant" ? text.replace(THINK, "") : text).trim();
}

function role(message: Json): unknown {
  return message.role === "developer" ? "system" : message.role;
}

function parsedArguments(args: unknown): unknown {
  if (typeof args !== "string") return args ?? {};
  try {
    return JSON.parse(args);
  } catch {
    return { unparsed: args.trim() };
  }
}

/** The tool calls' comparable form (rule 4): name and parsed arguments each. */
function calls(message: Json): { name: unknown; args: unknown }[] {
  const list = Array.isArray(message.tool_calls) ? (message.tool_calls as Json[]) : [];
  return list.map((call) => {
    const fn = (call?.function ?? {}) as Json;
    return { name: fn.name, args: parsedArguments(fn.arguments) };
  });
}

/**
 * Whether two chat messages are the same turn under the module's rules.
 * @param a - a message as recorded (what the agent sent earlier, or the answer the proxy gave)
 * @param b - a message as the agent sends it now
 */
export function sameMessage(a: Json, b: Json): boolean {
  return role(a) === role(b) && messageText(a) === messageText(b) && isDeepStrictEqual(calls(a), calls(b));
}

/** `tools` normalised for comparison: undefined for absent, null or empty. */
function toolList(tools: unknown): unknown {
  return Array.isArray(tools) && tools.length > 0 ? tools : undefined;
}

/**
 * Whether two requests offer the same tools (rule 6); `isDeepStrictEqual` ignores key order.
 * @param a - one request's `tools`
 * @param b - another's
 */
export function sameTools(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(toolList(a), toolList(b));
}
