/**
 * @module Lossless edits of a JSON object's top-level fields: the named fields are replaced, appended or removed in
 * the raw text, and every other byte (numbers beyond 2^53, `1.0` vs `1`, escapes, whitespace, key order, duplicate
 * keys) stays exactly as the agent sent it. The proxy rewrites request bodies with it instead of parse + stringify.
 */

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const OPEN_OBJECT = 0x7b; // {
const CLOSE_OBJECT = 0x7d; // }
const OPEN_ARRAY = 0x5b; // [
const CLOSE_ARRAY = 0x5d; // ]
const COMMA = 0x2c; // ,
const COLON = 0x3a; // :

/** One top-level member of the object text: `"key": value`, as offsets into the text. */
interface Member {
  key: string;
  /** Offset of the key's opening quote. */
  start: number;
  /** Offset of the first character of the value. */
  valueStart: number;
  /** Offset just past the value. */
  valueEnd: number;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** `i` at an opening quote; @returns the offset just past the closing quote. */
function skipString(text: string, i: number): number {
  let j = i;
  for (;;) {
    j = text.indexOf('"', j + 1);
    if (j === -1) throw new TypeError("Unterminated string in JSON text");
    let backslashes = 0;
    while (text.charCodeAt(j - 1 - backslashes) === BACKSLASH) backslashes++;
    // An even run of backslashes escapes itself, not the quote.
    if (backslashes % 2 === 0) return j + 1;
  }
}

/** `i` at an opening bracket; @returns the offset just past its matching bracket (strings skipped). */
function skipContainer(text: string, i: number): number {
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) j = skipString(text, j) - 1;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if ((c === CLOSE_OBJECT || c === CLOSE_ARRAY) && --depth === 0) return j + 1;
  }
  throw new TypeError("Unterminated array or object in JSON text");
}

/** `i` at the first character of a value; @returns the offset just past it. */
function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return skipString(text, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) return skipContainer(text, i);
  let j = i;
  // A number or a literal (true, false, null) runs to the next separator.
  for (; j < text.length; j++) {
    const d = text.charCodeAt(j);
    if (d === COMMA || d === CLOSE_OBJECT || d === CLOSE_ARRAY || isSpace(d)) break;
  }
  if (j === i) throw new TypeError(`Expected a JSON value at offset ${i}`);
  return j;
}

/** The top-level members of an object text, and the offset of its closing brace. */
function scanObject(text: string): { members: Member[]; close: number } {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_OBJECT) throw new TypeError("JSON text is not an object");
  i = skipSpace(text, i + 1);
  const members: Member[] = [];
  if (text.charCodeAt(i) === CLOSE_OBJECT) return { members, close: i };
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) throw new TypeError(`Expected a key at offset ${i}`);
    const keyEnd = skipString(text, i);
    const rawKey = text.slice(i + 1, keyEnd - 1);
    const key = rawKey.includes("\\") ? (JSON.parse(text.slice(i, keyEnd)) as string) : rawKey;
    let j = skipSpace(text, keyEnd);
    if (text.charCodeAt(j) !== COLON) throw new TypeError(`Expected ':' at offset ${j}`);
    const valueStart = skipSpace(text, j + 1);
    const valueEnd = skipValue(text, valueStart);
    members.push({ key, start: i, valueStart, valueEnd });
    j = skipSpace(text, valueEnd);
    const c = text.charCodeAt(j);
    if (c === CLOSE_OBJECT) return { members, close: j };
    if (c !== COMMA) throw new TypeError(`Expected ',' or '}' at offset ${j}`);
    i = skipSpace(text, j + 1);
  }
}

/**
 * Sets top-level fields of a JSON object text, keeping every other byte of it. A field already present keeps its
 * place and gets the new value (every occurrence, when the key is duplicated); a field not present is appended at the
 * end, in the order of `fields`; a field set to `undefined` is removed. Values are written with `JSON.stringify`.
 *
 * Example: `setFields('{"seed": 12345678901234567890, "model":"x"}', { model: "policy", logprobs: true })` gives
 * `'{"seed": 12345678901234567890, "model":"policy","logprobs":true}'`.
 * @param rawBody - JSON text whose top level is an object (already validated by a parser)
 * @param fields - field name to new value; `undefined` removes the field
 * @returns the edited text; `rawBody` itself when `fields` is empty
 * @throws {TypeError} when `rawBody` is not the text of a JSON object
 */
export function setFields(rawBody: string, fields: Readonly<Record<string, unknown>>): string {
  const names = Object.keys(fields);
  if (names.length === 0) return rawBody;
  const { members, close } = scanObject(rawBody);
  const present = new Set<string>();
  const kept: string[] = [];
  // The original separator after each kept member (a comma and any whitespace), so an untouched body is unchanged.
  const separators: string[] = [];
  for (let k = 0; k < members.length; k++) {
    const m = members[k]!;
    const next = members[k + 1];
    const separator = next ? rawBody.slice(m.valueEnd, next.start) : ",";
    if (!Object.hasOwn(fields, m.key)) {
      kept.push(rawBody.slice(m.start, m.valueEnd));
      separators.push(separator);
      continue;
    }
    present.add(m.key);
    const value = fields[m.key];
    if (value === undefined) continue;
    kept.push(rawBody.slice(m.start, m.valueStart) + JSON.stringify(value));
    separators.push(separator);
  }
  for (const name of names) {
    if (present.has(name) || fields[name] === undefined) continue;
    kept.push(`${JSON.stringify(name)}:${JSON.stringify(fields[name])}`);
    separators.push(",");
  }
  const head = members.length > 0 ? rawBody.slice(0, members[0]!.start) : rawBody.slice(0, close);
  const tail = members.length > 0 ? rawBody.slice(members.at(-1)!.valueEnd) : rawBody.slice(close);
  let out = head;
  kept.forEach((member, k) => {
    out += (k > 0 ? separators[k - 1] : "") + member;
  });
  return out + tail;
}
