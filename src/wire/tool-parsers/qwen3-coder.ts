/**
 * @module vLLM's `qwen3_coder` parser: XML `<function=NAME><parameter=KEY>VALUE</parameter></function>` calls,
 * values typed by the tool's schema. @see vLLM `vllm/tool_parsers/qwen3coder_tool_parser.py`
 */
import { type ChatTool, noToolCalls, type ParsedToolCalls, type WireToolCall, wireToolCall } from "./common.js";
import {
  literalValue,
  PyFloat,
  PyInt,
  type PyValue,
  parsePythonExpression,
  pyDict,
  pyJsonDumps,
} from "./python-literal.js";

/** Every `<tool_call>` block, or an unterminated last one (Python's `$` also matches before a final `\n`). */
const TOOL_CALL = /<tool_call>([\s\S]*?)<\/tool_call>|<tool_call>([\s\S]*?)(?=\n?$)/g;
const FUNCTION = /<function=([\s\S]*?)<\/function>|<function=([\s\S]*)$/g;
const PARAMETER = /<parameter=([\s\S]*?)(?:<\/parameter>|(?=<parameter=)|(?=<\/function>)|(?=\n?$))/g;

/** The bodies of a pattern's matches: its first group, else its second. */
function bodies(text: string, pattern: RegExp): string[] {
  return [...text.matchAll(pattern)].map((match) => match[1] || match[2] || "");
}

/** The JSON-schema `properties` of a tool by name, `{}` when the tool or its parameters are unknown. */
function propertiesOf(name: string, tools: readonly ChatTool[] | undefined): Record<string, unknown> {
  const tool = tools?.find((t) => t.type === "function" && t.function?.name === name);
  const params = tool?.function?.parameters;
  if (params === null || typeof params !== "object" || Array.isArray(params)) return {};
  const properties = (params as { properties?: unknown }).properties;
  if (properties !== undefined) return (properties ?? {}) as Record<string, unknown>;
  return params as Record<string, unknown>;
}

/** Python `int(text)`; undefined when it is not one. */
function pythonInt(text: string): PyInt | undefined {
  const plain = text.trim();
  if (!/^[+-]?\d(?:_?\d)*$/.test(plain)) return undefined;
  return new PyInt(BigInt(plain.replaceAll("_", "")));
}

/** Python `float(text)`, int when integral, undefined for NaN or non-floats. @throws {RangeError} for ±inf (as vLLM) */
function pythonNumber(text: string): PyValue | undefined {
  const plain = text.trim().replaceAll("_", "").toLowerCase();
  const special = /^([+-]?)(inf|infinity|nan)$/.exec(plain);
  if (special !== null) {
    if (special[2] === "nan") return undefined;
    throw new RangeError("cannot convert float infinity to integer");
  }
  if (!/^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/.test(plain)) return undefined;
  const value = Number(plain);
  return Number.isInteger(value) ? new PyInt(BigInt(value)) : new PyFloat(value);
}

/** `ast.literal_eval(text)` (leading blanks and tabs dropped, as Python does); undefined when it fails. */
function literalEval(text: string): PyValue | undefined {
  try {
    return literalValue(parsePythonExpression(text.replace(/^[ \t]+/, "")));
  } catch {
    return undefined;
  }
}

/** A JSON value of `json.loads`, as a Python value; undefined when the text is not JSON. */
function jsonLoads(text: string): PyValue | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const toPy = (v: unknown): PyValue => {
    if (Array.isArray(v)) return v.map(toPy);
    if (v !== null && typeof v === "object") return pyDict(Object.entries(v).map(([k, x]) => [k, toPy(x)]));
    if (typeof v === "number") return Number.isInteger(v) ? new PyInt(BigInt(v)) : new PyFloat(v);
    return v as PyValue;
  };
  return toPy(value);
}

/** A parameter's value converted by its schema type, as vLLM's `_convert_param_value` does. */
function convertValue(value: string, name: string, properties: Record<string, unknown>): PyValue {
  if (value.toLowerCase() === "null") return null;
  if (!Object.hasOwn(properties, name)) return value;
  const schema = properties[name];
  const declared =
    schema !== null && typeof schema === "object" && Object.hasOwn(schema, "type")
      ? (schema as { type: unknown }).type
      : "string";
  const type = (typeof declared === "string" ? declared : JSON.stringify(declared)).trim().toLowerCase();
  if (["string", "str", "text", "varchar", "char", "enum"].includes(type)) return value;
  if (/^(?:int|uint|long|short|unsigned)/.test(type)) return pythonInt(value) ?? value;
  if (/^(?:num|float)/.test(type)) return pythonNumber(value) ?? value;
  if (["boolean", "bool", "binary"].includes(type)) return value.toLowerCase() === "true";
  if (["object", "array", "arr"].includes(type) || /^(?:dict|list)/.test(type)) {
    const loaded = jsonLoads(value);
    if (loaded !== undefined) return loaded;
  }
  return literalEval(value) ?? value;
}

/** One `<function=…>` body as a call. @throws when the name or a parameter has no `>` */
function callOf(body: string, tools: readonly ChatTool[] | undefined): WireToolCall {
  const nameEnd = body.indexOf(">");
  if (nameEnd < 0) throw new SyntaxError("function name without '>'");
  const name = body.slice(0, nameEnd);
  const properties = propertiesOf(name, tools);
  const pairs: [PyValue, PyValue][] = bodies(body.slice(nameEnd + 1), PARAMETER).map((param) => {
    const keyEnd = param.indexOf(">");
    if (keyEnd < 0) throw new SyntaxError("parameter name without '>'");
    const key = param.slice(0, keyEnd);
    let value = param.slice(keyEnd + 1);
    if (value.startsWith("\n")) value = value.slice(1);
    if (value.endsWith("\n")) value = value.slice(0, -1);
    return [key, convertValue(value, key, properties)];
  });
  return wireToolCall(name, pyJsonDumps(pyDict(pairs)));
}

/**
 * Calls are `<function=…>` bodies (inside `<tool_call>` blocks if any); values convert by the tool schema's type,
 * else stay strings. A body without `>` after its name leaves the whole text as content, as vLLM does.
 */
export function parseQwen3CoderToolCalls(text: string, tools?: readonly ChatTool[]): ParsedToolCalls {
  if (!text.includes("<function=")) return noToolCalls(text);
  try {
    let blocks = bodies(text, TOOL_CALL);
    if (blocks.length === 0) blocks = [text];
    const functions = blocks.flatMap((block) => bodies(block, FUNCTION));
    if (functions.length === 0) return noToolCalls(text);
    const toolCalls = functions.map((body) => callOf(body, tools));
    const start = text.indexOf("<tool_call>");
    const content = text.slice(0, start >= 0 ? start : text.indexOf("<function="));
    return { content: content === "" ? null : content, toolCalls };
  } catch {
    return noToolCalls(text);
  }
}
