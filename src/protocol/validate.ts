/** @module Parse untrusted input with a zod schema, turning failures into `ValidationFailed` (HTTP 422). */
import type { z } from "zod";
import { ValidationFailed, type ValidationIssue } from "./errors.js";
import { quoteStart } from "./text.js";

/** Longest field name quoted whole in an issue (longer ones by their start and length). */
const MAX_NAME_CHARS = 100;
/** Most unknown field names listed in one issue. */
const MAX_NAMES = 10;
/** Most issues a failure carries (a body can hold any number of bad entries); the message names the first few. */
const MAX_ISSUES = 50;
const MAX_ISSUES_IN_MESSAGE = 10;
/** Characters of `msg` and `loc` the issues after the first may add up to; the rest are counted, not listed. */
const MAX_ISSUE_CHARS = 8000;
/** Longest message (the summary of the first issues). */
const MAX_MESSAGE_CHARS = 2000;

/**
 * Parses `value` with `schema`, `locPrefix` prepended to each issue's `loc` (FastAPI shape).
 * @throws {ValidationFailed} with the issues, bounded by the limits above
 */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
  locPrefix: (string | number)[] = [],
): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const all = result.error.issues;
  const issues: ValidationIssue[] = [];
  let chars = 0;
  for (const issue of all.slice(0, MAX_ISSUES)) {
    const listed: ValidationIssue = {
      loc: [...locPrefix, ...issue.path.map(locPart)],
      msg: messageOf(issue),
      type: issue.code,
    };
    chars += listed.msg.length + listed.loc.reduce<number>((sum, part) => sum + String(part).length + 3, 0);
    if (issues.length > 0 && chars > MAX_ISSUE_CHARS) break;
    issues.push(listed);
  }
  const named = issues.slice(0, MAX_ISSUES_IN_MESSAGE);
  const summary = named.map((i) => `${i.loc.slice(locPrefix.length).join(".") || "(root)"}: ${i.msg}`).join("; ");
  const more = all.length > named.length ? `; and ${all.length - named.length} more issue(s)` : "";
  throw new ValidationFailed(`${what}: ${quoteStart(summary, MAX_MESSAGE_CHARS)}${more}`, issues);
}

/** A path element as `loc` shows it: a field name longer than {@link MAX_NAME_CHARS} by its start and length. */
function locPart(part: PropertyKey): string | number {
  if (typeof part === "number") return part;
  return quoteStart(String(part), MAX_NAME_CHARS);
}

/** An issue's message in plain words where zod's reads oddly (`expected int, received number` for 1.5). */
function messageOf(issue: z.core.$ZodIssue): string {
  if (issue.code === "unrecognized_keys") {
    const names = issue.keys.slice(0, MAX_NAMES).map((key) => quoteStart(key, MAX_NAME_CHARS));
    const more = issue.keys.length > MAX_NAMES ? `, and ${issue.keys.length - MAX_NAMES} more` : "";
    return `unknown field(s): ${names.join(", ")}${more}`;
  }
  if (issue.code === "invalid_type" && issue.expected === "int") return "expected an integer";
  return issue.message;
}
