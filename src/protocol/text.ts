/**
 * @module Strings the stores keep as text columns must be well-formed UTF-16: SQLite stores UTF-8, and a lone
 * surrogate (e.g. `"\ud800"`) becomes U+FFFD on the way in, so a stored id or event type would silently differ from
 * the one sent and no longer match a filter. (JSON payloads such as event `data` are stored as JSON text, which
 * escapes lone surrogates, so they survive and are not checked.)
 */
import { z } from "zod";

/** A lone surrogate: in a `u` regex a well-formed pair is one code point, so only unpaired halves match. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * True when `text` holds no lone surrogate (what `String.prototype.isWellFormed` answers; ES2024, kept out of our
 * ES2023 lib typing).
 * @param text - any string
 */
export function isWellFormedText(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/**
 * A zod string that must be well-formed UTF-16.
 * @param minLength - fewest characters (UTF-16 code units); default 0
 * @param maxLength - most characters; default unbounded
 * @returns the schema; a lone surrogate fails with "must be well-formed UTF-16 (no lone surrogate)"
 */
export function wellFormedString(minLength = 0, maxLength?: number): z.ZodString {
  let schema = z.string().min(minLength);
  if (maxLength !== undefined) schema = schema.max(maxLength);
  return schema.refine(isWellFormedText, "must be well-formed UTF-16 (no lone surrogate)");
}

/**
 * `text` as it is when at most `max` characters, else its first `max` characters, an ellipsis and its length
 * (`yyy… (1015 characters)`): how an error quotes input that may be very long (a URL, an id from a path).
 * @param text - the input to quote
 * @param max - most characters kept
 */
export function quoteStart(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}
