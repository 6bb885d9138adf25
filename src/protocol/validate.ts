/** @module Parse untrusted input with a zod schema, turning failures into `ValidationFailed` (HTTP 422). */
import type { z } from "zod";
import { ValidationFailed, type ValidationIssue } from "./errors.js";

/**
 * Parses `value` with `schema`.
 * @param schema - the zod schema
 * @param value - untrusted input
 * @param what - what is being parsed, for the message, e.g. "rollout create"
 * @param locPrefix - prepended to each issue's `loc`, e.g. `["body"]` for FastAPI-shaped details
 * @returns the parsed value (defaults applied)
 * @throws {ValidationFailed} listing every issue, e.g. `rollout create: config.timeout_seconds: Too small`
 */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  what: string,
  locPrefix: (string | number)[] = [],
): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues: ValidationIssue[] = result.error.issues.map((issue) => ({
    loc: [...locPrefix, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))],
    msg: messageOf(issue),
    type: issue.code,
  }));
  const summary = issues.map((i) => `${i.loc.slice(locPrefix.length).join(".") || "(root)"}: ${i.msg}`).join("; ");
  throw new ValidationFailed(`${what}: ${summary}`, issues);
}

/** An issue's message in plain words where zod's reads oddly (`expected int, received number` for 1.5). */
function messageOf(issue: z.core.$ZodIssue): string {
  if (issue.code === "unrecognized_keys") return `unknown field(s): ${issue.keys.join(", ")}`;
  if (issue.code === "invalid_type" && issue.expected === "int") return "expected an integer";
  return issue.message;
}
