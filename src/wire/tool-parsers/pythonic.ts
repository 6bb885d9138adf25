/**
 * @module vLLM's `pythonic` parser: the answer is a Python list of keyword calls, `[get_weather(city="Paris")]`.
 * @see vLLM `vllm/tool_parsers/pythonic_tool_parser.py`
 */
import { noToolCalls, type ParsedToolCalls, type WireToolCall, wireToolCall } from "./common.js";
import { PyDict, type PyNode, type PyValue, parsePythonExpression, pyDict, pyJsonDumps } from "./python-literal.js";

/** vLLM's quick test: the text opens with `[`, a name and `(` directly (its regex is anchored at the start). */
const OPENS_WITH_CALL = /^\[[A-Za-z][A-Za-z0-9_]*\(/;

/** An argument value as vLLM reads it: a constant, or a list or dict of them (dict keys must be constants). */
function argumentValue(node: PyNode): PyValue {
  if (node.kind === "const") return node.value;
  if (node.kind === "list") return node.items.map(argumentValue);
  if (node.kind === "dict" && node.keys.every((key) => key.kind === "const")) {
    return pyDict(node.keys.map((key, i) => [argumentValue(key), argumentValue(node.values[i]!)]));
  }
  throw new Error("tool call arguments must be literals");
}

/** One call node as a wire call; positional arguments are left out, as vLLM reads only keywords. */
function callOf(node: PyNode): WireToolCall {
  if (node.kind !== "call" || node.dotted) throw new Error("not a call of a plain name");
  const args = new PyDict(node.keywords.map(([name, value]) => [name, argumentValue(value)]));
  return wireToolCall(node.name, pyJsonDumps(pyDict(args.entries)));
}

/** The whole text must be one list of literal keyword calls, else it is all content (as vLLM). */
export function parsePythonicToolCalls(text: string): ParsedToolCalls {
  if (!OPENS_WITH_CALL.test(text)) return noToolCalls(text);
  try {
    const node = parsePythonExpression(text);
    if (node.kind !== "list" || node.items.some((item) => item.kind !== "call")) return noToolCalls(text);
    return { content: null, toolCalls: node.items.map(callOf) };
  } catch {
    return noToolCalls(text);
  }
}
