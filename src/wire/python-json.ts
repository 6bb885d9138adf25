/** @module Python's `json.dumps(value, ensure_ascii=False)` text of a JSON value, as vLLM writes tool-call arguments. */

/**
 * Serialises like Python `json.dumps(value, ensure_ascii=False)`: `", "` and `": "` separators, non-ASCII kept, keys
 * whose value is `undefined` left out. Differs from Python for floats with an integral value (`1.0` prints as `1`)
 * and for lone surrogates.
 * @param value - a JSON value
 * @returns its text
 * @see vLLM `hermes_tool_parser.py`: `json.dumps(function_call["arguments"], ensure_ascii=False)`
 */
export function pythonJsonDumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonJsonDumps(v)}`).join(", ")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
