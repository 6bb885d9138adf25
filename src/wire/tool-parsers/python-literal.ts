/**
 * @module Python literal expressions read into values and written as `json.dumps(…, ensure_ascii=False)`: what
 * vLLM's `pythonic` and `qwen3_coder` parsers do with `ast`.
 */

/** A Python int, kept exact (`json.dumps` prints every digit). */
export class PyInt {
  constructor(readonly value: bigint) {}
}

/** A Python float (`json.dumps` prints its `repr`: `1.0`, `1e-07`, `Infinity`). */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** A Python dict: keys in insertion order, a repeated key keeping its first place and its last value. */
export class PyDict {
  constructor(readonly entries: [PyValue, PyValue][]) {}
}

/** A value json.dumps cannot write (bytes, complex, Ellipsis, a set): writing it throws. */
export class PyUnserialisable {
  constructor(readonly what: string) {}
}

/** A Python value read from a literal. */
export type PyValue = null | boolean | string | PyInt | PyFloat | PyDict | PyUnserialisable | PyValue[];

/** A parsed expression node: a value, a tuple, a set, a call `name(k=v, …)`, or a unary minus/plus on a number. */
export type PyNode =
  | { kind: "const"; value: PyValue }
  | { kind: "list" | "tuple" | "set"; items: PyNode[] }
  | { kind: "dict"; keys: PyNode[]; values: PyNode[] }
  | { kind: "call"; name: string; dotted: boolean; positional: number; keywords: [string, PyNode][] }
  | { kind: "unary"; op: "-" | "+"; operand: PyNode }
  | { kind: "name"; name: string };

/** Thrown for text that is not a literal expression of the supported grammar. */
export class PySyntaxError extends Error {}

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER =
  /(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|(?:\d(?:_?\d)*)?\.?(?:\d(?:_?\d)*)?(?:[eE][+-]?\d(?:_?\d)*)?)[jJ]?/y;
const SIMPLE_ESCAPES: Record<string, string> = {
  "\\": "\\",
  "'": "'",
  '"': '"',
  a: "\x07",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
};

/** A recursive-descent reader of one Python expression. */
class Reader {
  at = 0;
  constructor(readonly text: string) {}

  /** Skips blanks, newlines and `#` comments (inside brackets Python ignores line breaks). */
  skip(): void {
    const { text } = this;
    while (this.at < text.length) {
      const ch = text[this.at]!;
      if (ch === " " || ch === "\t" || ch === "\n" || ch === "\r" || ch === "\f") this.at += 1;
      else if (ch === "\\" && text[this.at + 1] === "\n") this.at += 2;
      else if (ch === "#") while (this.at < text.length && text[this.at] !== "\n") this.at += 1;
      else break;
    }
  }

  fail(what: string): never {
    throw new PySyntaxError(`${what} at ${this.at}`);
  }

  eat(ch: string): boolean {
    this.skip();
    if (this.text.startsWith(ch, this.at)) {
      this.at += ch.length;
      return true;
    }
    return false;
  }

  expect(ch: string): void {
    if (!this.eat(ch)) this.fail(`expected "${ch}"`);
  }

  /** One expression. */
  expression(): PyNode {
    this.skip();
    const ch = this.text[this.at];
    if (ch === "-" || ch === "+") {
      this.at += 1;
      return { kind: "unary", op: ch, operand: this.expression() };
    }
    if (ch === "[") return this.sequence("[", "]", "list");
    if (ch === "(") return this.parenthesised();
    if (ch === "{") return this.braces();
    if (ch === '"' || ch === "'" || this.startsString()) return this.strings();
    if (ch !== undefined && /[0-9.]/.test(ch)) return this.number();
    return this.nameOrCall();
  }

  private startsString(): boolean {
    return /^(?:[rRuUbBfF]|[rR][bBfF]|[bBfF][rR])['"]/.test(this.text.slice(this.at, this.at + 3));
  }

  private sequence(open: string, close: string, kind: "list" | "tuple" | "set"): PyNode {
    this.expect(open);
    const items: PyNode[] = [];
    while (!this.eat(close)) {
      items.push(this.expression());
      if (!this.eat(",")) {
        this.expect(close);
        break;
      }
    }
    return { kind, items };
  }

  private parenthesised(): PyNode {
    const start = this.at;
    this.expect("(");
    if (this.eat(")")) return { kind: "tuple", items: [] };
    const first = this.expression();
    if (this.eat(")")) return first;
    this.at = start;
    return this.sequence("(", ")", "tuple");
  }

  private braces(): PyNode {
    this.expect("{");
    if (this.eat("}")) return { kind: "dict", keys: [], values: [] };
    const first = this.expression();
    if (!this.eat(":")) {
      const items = [first];
      while (this.eat(",") && !this.eat("}")) items.push(this.expression());
      if (this.text[this.at - 1] !== "}") this.expect("}");
      return { kind: "set", items };
    }
    const keys = [first];
    const values = [this.expression()];
    while (this.eat(",")) {
      if (this.eat("}")) return { kind: "dict", keys, values };
      keys.push(this.expression());
      this.expect(":");
      values.push(this.expression());
    }
    this.expect("}");
    return { kind: "dict", keys, values };
  }

  /** Adjacent string literals, joined (Python concatenates them into one constant). */
  private strings(): PyNode {
    let joined = "";
    let bytes = false;
    let formatted = false;
    do {
      const one = this.string();
      joined += one.value;
      bytes ||= one.bytes;
      formatted ||= one.formatted;
      this.skip();
    } while (this.text[this.at] === '"' || this.text[this.at] === "'" || this.startsString());
    if (formatted) return { kind: "name", name: "f-string" };
    return { kind: "const", value: bytes ? new PyUnserialisable("bytes") : joined };
  }

  private string(): { value: string; bytes: boolean; formatted: boolean } {
    const prefix = /^[rRuUbBfF]{0,2}/.exec(this.text.slice(this.at, this.at + 2))![0].toLowerCase();
    this.at += prefix.length;
    const quote = this.text.startsWith(this.text[this.at]!.repeat(3), this.at)
      ? this.text[this.at]!.repeat(3)
      : this.text[this.at]!;
    this.at += quote.length;
    const raw = prefix.includes("r");
    let value = "";
    for (;;) {
      if (this.at >= this.text.length) this.fail("unterminated string");
      if (this.text.startsWith(quote, this.at)) break;
      const ch = this.text[this.at]!;
      if (ch === "\n" && quote.length === 1) this.fail("line break in string");
      if (ch !== "\\") {
        value += ch;
        this.at += 1;
      } else if (raw) {
        value += this.text.slice(this.at, this.at + 2);
        this.at += 2;
      } else value += this.escape();
    }
    this.at += quote.length;
    return { value, bytes: prefix.includes("b"), formatted: prefix.includes("f") };
  }

  /** One backslash escape of a non-raw string; unknown escapes stay as written (as Python keeps them). */
  private escape(): string {
    const next = this.text[this.at + 1];
    if (next === undefined) this.fail("unterminated string");
    this.at += 2;
    if (next === "\n") return "";
    if (Object.hasOwn(SIMPLE_ESCAPES, next)) return SIMPLE_ESCAPES[next]!;
    if (/[0-7]/.test(next)) {
      const digits = /^[0-7]{0,2}/.exec(this.text.slice(this.at, this.at + 2))![0];
      this.at += digits.length;
      return String.fromCodePoint(Number.parseInt(next + digits, 8));
    }
    const width = { x: 2, u: 4, U: 8 }[next as "x" | "u" | "U"];
    if (width === undefined) return `\\${next}`;
    const hex = this.text.slice(this.at, this.at + width);
    if (!new RegExp(`^[0-9a-fA-F]{${width}}$`).test(hex)) this.fail("bad escape");
    this.at += width;
    const code = Number.parseInt(hex, 16);
    if (code > 0x10ffff) this.fail("bad escape");
    return String.fromCodePoint(code);
  }

  private number(): PyNode {
    NUMBER.lastIndex = this.at;
    const text = NUMBER.exec(this.text)?.[0] ?? "";
    if (text === "" || text === "." || /^\.?[eEjJ]/.test(text)) this.fail("bad number");
    this.at += text.length;
    if (/[jJ]$/.test(text)) return { kind: "const", value: new PyUnserialisable("complex") };
    const plain = text.replaceAll("_", "");
    if (/^0[xXoObB]/.test(plain)) return { kind: "const", value: new PyInt(BigInt(plain)) };
    if (/^\d+$/.test(plain)) {
      if (/^0+[1-9]/.test(plain)) this.fail("leading zeros in a decimal integer");
      return { kind: "const", value: new PyInt(BigInt(plain)) };
    }
    return { kind: "const", value: new PyFloat(Number(plain)) };
  }

  private nameOrCall(): PyNode {
    if (this.text.startsWith("...", this.at)) {
      this.at += 3;
      return { kind: "const", value: new PyUnserialisable("Ellipsis") };
    }
    IDENT.lastIndex = this.at;
    const name = IDENT.exec(this.text)?.[0];
    if (name === undefined) this.fail("expected an expression");
    this.at += name.length;
    if (name === "True" || name === "False") return { kind: "const", value: name === "True" };
    if (name === "None") return { kind: "const", value: null };
    let dotted = false;
    while (this.eat(".")) {
      IDENT.lastIndex = this.at;
      const part = IDENT.exec(this.text)?.[0];
      if (part === undefined) this.fail("expected a name");
      this.at += part.length;
      dotted = true;
    }
    if (!this.eat("(")) return { kind: "name", name };
    return this.callArguments(name, dotted);
  }

  private callArguments(name: string, dotted: boolean): PyNode {
    const keywords: [string, PyNode][] = [];
    let positional = 0;
    while (!this.eat(")")) {
      this.skip();
      IDENT.lastIndex = this.at;
      const keyword = IDENT.exec(this.text)?.[0];
      const afterName = this.at + (keyword?.length ?? 0);
      if (keyword !== undefined && /^\s*=(?!=)/.test(this.text.slice(afterName))) {
        this.at = afterName;
        this.expect("=");
        keywords.push([keyword, this.expression()]);
      } else {
        this.expression();
        positional += 1;
      }
      if (!this.eat(",")) {
        this.expect(")");
        break;
      }
    }
    return { kind: "call", name, dotted, positional, keywords };
  }
}

/** Parses text holding exactly one expression. @throws {PySyntaxError} outside the supported grammar */
export function parsePythonExpression(text: string): PyNode {
  const reader = new Reader(text);
  const node = reader.expression();
  reader.skip();
  if (reader.at !== text.length) reader.fail("unexpected text after the expression");
  return node;
}

/** A dict key's identity under Python equality (`1`, `1.0` and `True` are one key). */
function keyIdentity(key: PyValue): string {
  if (typeof key === "string") return `s${key}`;
  if (key === null) return "none";
  if (typeof key === "boolean") return `n${key ? 1 : 0}`;
  if (key instanceof PyInt) return `n${key.value}`;
  if (key instanceof PyFloat) return Number.isInteger(key.value) ? `n${BigInt(key.value)}` : `n${key.value}`;
  throw new PySyntaxError("unhashable dict key");
}

/** A dict from key/value pairs, Python-style: a repeated key keeps its first place and takes the last value. */
export function pyDict(pairs: [PyValue, PyValue][]): PyDict {
  const at = new Map<string, number>();
  const entries: [PyValue, PyValue][] = [];
  for (const [key, value] of pairs) {
    const identity = keyIdentity(key);
    const index = at.get(identity);
    if (index === undefined) {
      at.set(identity, entries.length);
      entries.push([key, value]);
    } else entries[index] = [entries[index]![0], value];
  }
  return new PyDict(entries);
}

/** Python `repr(float)`: shortest round-trip, fixed for exponents -4..15, `Infinity`/`NaN` as json.dumps writes. */
export function pythonFloatRepr(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const [mantissa, exponentText] = value.toExponential().split("e") as [string, string];
  const exponent = Number(exponentText);
  const sign = mantissa.startsWith("-") ? "-" : "";
  const digits = mantissa.replace("-", "").replace(".", "");
  if (exponent < -4 || exponent >= 16) {
    const body = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${body}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  const fraction = digits.slice(exponent + 1);
  return `${sign}${whole}.${fraction === "" ? "0" : fraction}`;
}

/** A dict key as json.dumps writes it: strings as they are, numbers and constants as their JSON text. */
function jsonKey(key: PyValue): string {
  if (typeof key === "string") return key;
  if (key === null) return "null";
  if (typeof key === "boolean") return key ? "true" : "false";
  if (key instanceof PyInt) return String(key.value);
  if (key instanceof PyFloat) return pythonFloatRepr(key.value);
  throw new PySyntaxError("keys must be str, int, float, bool or None");
}

/** Python `json.dumps(value, ensure_ascii=False)`. @throws {PySyntaxError} for bytes, complex, Ellipsis, a set */
export function pyJsonDumps(value: PyValue): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "string") return JSON.stringify(value);
  if (value instanceof PyInt) return String(value.value);
  if (value instanceof PyFloat) return pythonFloatRepr(value.value);
  if (value instanceof PyUnserialisable) throw new PySyntaxError(`${value.what} is not JSON serializable`);
  if (Array.isArray(value)) return `[${value.map(pyJsonDumps).join(", ")}]`;
  return `{${value.entries.map(([k, v]) => `${JSON.stringify(jsonKey(k))}: ${pyJsonDumps(v)}`).join(", ")}}`;
}

/** Python `ast.literal_eval`. @throws {PySyntaxError} for names, calls and signs on non-numbers */
export function literalValue(node: PyNode): PyValue {
  switch (node.kind) {
    case "const":
      return node.value;
    case "list":
    case "tuple":
      return node.items.map(literalValue);
    case "set":
      node.items.forEach(literalValue);
      return new PyUnserialisable("set");
    case "dict":
      return pyDict(node.keys.map((key, i) => [literalValue(key), literalValue(node.values[i]!)]));
    case "unary": {
      const operand = literalValue(node.operand);
      if (operand instanceof PyInt) return new PyInt(node.op === "-" ? -operand.value : operand.value);
      if (operand instanceof PyFloat) return new PyFloat(node.op === "-" ? -operand.value : operand.value);
      if (operand instanceof PyUnserialisable && operand.what === "complex") return operand;
      throw new PySyntaxError("malformed node");
    }
    default:
      throw new PySyntaxError("malformed node");
  }
}
