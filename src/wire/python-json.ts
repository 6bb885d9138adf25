/** @module Python's `json.dumps(value, ensure_ascii=False)` text of a JSON value, as vLLM writes tool-call arguments. */

/**
 * Python `json.dumps(value, ensure_ascii=False)`, `undefined` keys left out; differs for integral floats (`1.0` → `1`)
 * and lone surrogates. @see vLLM `hermes_tool_parser.py`
 */
export function pythonJsonDumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(", ")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pythonJsonDumps(v)}`).join(", ")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
