/**
 * @module Text columns must be well-formed UTF-16: SQLite turns a lone surrogate into U+FFFD, so a stored id would
 * no longer match a filter. JSON payloads escape them and are not checked.
 */
import { z } from "zod";

/** A lone surrogate: in a `u` regex a well-formed pair is one code point, so only unpaired halves match. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** True when `text` holds no lone surrogate (`String.prototype.isWellFormed` is ES2024, outside our lib typing). */
export function isWellFormedText(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/** A zod string that must be well-formed UTF-16, lengths in code units. */
export function wellFormedString(minLength = 0, maxLength?: number): z.ZodString {
  let schema = z.string().min(minLength);
  if (maxLength !== undefined) schema = schema.max(maxLength);
  return schema.refine(isWellFormedText, "must be well-formed UTF-16 (no lone surrogate)");
}

/** `text`, or its first `max` characters plus its length (`yyy… (1015 characters)`) when longer. */
export function quoteStart(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}
