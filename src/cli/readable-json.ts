/**
 * @module JSON for a terminal: indented like `JSON.stringify(v, null, 2)`, but an array of numbers, strings,
 * booleans or nulls stays on one line, so token ids and logprobs read as rows instead of one value per line.
 */

/** @returns `value` as indented JSON with flat arrays of scalars kept on one line */
export function readableJson(value: unknown): string {
  return render(value, "");
}

function render(value: unknown, indent: string): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    if (value.every((item) => item === null || typeof item !== "object")) {
      return `[${value.map((item) => JSON.stringify(item) ?? "null").join(", ")}]`;
    }
    return `[\n${value.map((item) => inner + render(item, inner)).join(",\n")}\n${indent}]`;
  }
  const entries = Object.entries(value).filter(([, item]) => item !== undefined && typeof item !== "function");
  if (entries.length === 0) return "{}";
  const lines = entries.map(([key, item]) => `${inner}${JSON.stringify(key)}: ${render(item, inner)}`);
  return `{\n${lines.join(",\n")}\n${indent}}`;
}
