/**
 * @module Nesting depth of JSON text, measured before parsing: deeply nested bodies are refused at the door, because
 * storing them (`JSON.stringify`, a recursive walk) would overflow the stack.
 */

/** Deepest nesting of arrays and objects a JSON body may have; a top-level `{}` or `[]` is depth 1. */
export const MAX_JSON_DEPTH = 128;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/**
 * Tells whether JSON text nests arrays and objects deeper than `maxDepth`, in one linear scan without recursion.
 * Brackets inside strings do not count. Text that is not JSON gets some answer; the parser rejects it anyway.
 * @param text - the raw body
 * @param maxDepth - the deepest nesting allowed (levels)
 * @returns true when some point of `text` is nested deeper than `maxDepth`
 */
export function jsonDepthExceeds(text: string, maxDepth: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i);
      if (i === -1) return false; // unterminated string: not JSON, the parser refuses it
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

/**
 * The offset of the quote closing the string opened at `open`, found with `indexOf` (native, far faster than a
 * character loop over long prompts): a quote preceded by an odd run of backslashes is escaped. -1 when none.
 */
function closingQuote(text: string, open: number): number {
  let j = open;
  for (;;) {
    j = text.indexOf('"', j + 1);
    if (j === -1) return -1;
    let backslashes = 0;
    while (text.charCodeAt(j - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return j;
  }
}
