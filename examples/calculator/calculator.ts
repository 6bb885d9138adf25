/**
 * @module The `calculator` tool: a safe arithmetic evaluator (integers, + - * /, unary minus, parentheses) written as
 * a small recursive-descent parser. It never calls eval; anything outside the grammar is an error string.
 */

/** Longest expression the tool accepts, in characters (keeps work and error text bounded). */
export const MAX_EXPRESSION_CHARS = 200;
/** Deepest nesting of parentheses and unary signs accepted (keeps the recursion far from the stack limit). */
export const MAX_DEPTH = 32;

/** Why an expression could not be evaluated; `message` is short enough to hand back to a tiny model. */
export class CalculatorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CalculatorError";
  }
}

/**
 * Parser state over one expression. Grammar (usual precedence, left-associative):
 * ```text
 * expr    := term (("+" | "-") term)*
 * term    := unary (("*" | "/") unary)*
 * unary   := ("+" | "-") unary | primary
 * primary := INTEGER | "(" expr ")"
 * ```
 */
class Parser {
  private pos = 0;
  private depth = 0;

  constructor(private readonly text: string) {}

  /** Parses the whole text as one expression. */
  parseAll(): number {
    if (this.peek() === undefined) throw new CalculatorError("empty expression");
    const value = this.expr();
    const rest = this.peek();
    if (rest === ")") throw new CalculatorError(`unbalanced ')' at ${this.pos}`);
    if (rest !== undefined) throw new CalculatorError(`unexpected '${rest}' at ${this.pos}`);
    return value;
  }

  private expr(): number {
    let value = this.term();
    for (let op = this.peek(); op === "+" || op === "-"; op = this.peek()) {
      this.pos += 1;
      const right = this.term();
      value = checked(op === "+" ? value + right : value - right);
    }
    return value;
  }

  private term(): number {
    let value = this.unary();
    for (let op = this.peek(); op === "*" || op === "/"; op = this.peek()) {
      this.pos += 1;
      const right = this.unary();
      if (op === "/" && right === 0) throw new CalculatorError("division by zero");
      value = checked(op === "*" ? value * right : value / right);
    }
    return value;
  }

  private unary(): number {
    const sign = this.peek();
    if (sign !== "+" && sign !== "-") return this.primary();
    this.pos += 1;
    const value = this.nested(() => this.unary());
    return sign === "-" ? -value : value;
  }

  private primary(): number {
    const ch = this.peek();
    if (ch === "(") {
      this.pos += 1;
      const value = this.nested(() => this.expr());
      if (this.peek() !== ")") throw new CalculatorError(`missing ')' at ${this.pos}`);
      this.pos += 1;
      return value;
    }
    if (ch !== undefined && ch >= "0" && ch <= "9") return this.integer();
    if (ch === undefined) throw new CalculatorError("unexpected end");
    throw new CalculatorError(`unexpected '${ch}' at ${this.pos}`);
  }

  private integer(): number {
    const start = this.pos;
    while (this.pos < this.text.length && this.text[this.pos]! >= "0" && this.text[this.pos]! <= "9") this.pos += 1;
    return checked(Number(this.text.slice(start, this.pos)));
  }

  /** Runs one nested parse, refusing nesting deeper than {@link MAX_DEPTH}. */
  private nested(parse: () => number): number {
    this.depth += 1;
    if (this.depth > MAX_DEPTH) throw new CalculatorError("too deeply nested");
    const value = parse();
    this.depth -= 1;
    return value;
  }

  /** The next non-blank character, skipping blanks; undefined at the end. */
  private peek(): string | undefined {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos += 1;
    return this.text[this.pos];
  }
}

/** Refuses values past 2^53, where integer arithmetic on doubles stops being exact. */
function checked(value: number): number {
  if (!Number.isFinite(value) || Math.abs(value) > Number.MAX_SAFE_INTEGER)
    throw new CalculatorError("number too large");
  return value;
}

/**
 * Evaluates an arithmetic expression with the usual precedence (`*` `/` before `+` `-`, left to right) and
 * parentheses. Division is exact real division (7/2 = 3.5).
 * @param expression - e.g. `"12+7*3"` or `"(12 + 7) * -3"`; at most {@link MAX_EXPRESSION_CHARS} characters
 * @returns the value
 * @throws {CalculatorError} on a syntax error, division by zero, nesting deeper than {@link MAX_DEPTH}, a value past
 *   2^53, or an over-long expression
 */
export function evaluate(expression: string): number {
  if (expression.length > MAX_EXPRESSION_CHARS) throw new CalculatorError("expression too long");
  const value = new Parser(expression).parseAll();
  return value === 0 ? 0 : value; // no "-0"
}

/**
 * Formats a value as the tool writes it: integers plainly ("21", "-4"), other values to 10 significant digits with
 * trailing zeros dropped ("3.5", "0.3333333333").
 * @param value - a finite number
 * @returns its text
 */
export function formatNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(10)));
}

/**
 * The calculator tool as a model sees it: the result text, or `error: <why>` (never throws for bad input).
 * @param expression - the `expression` argument of the tool call
 * @returns e.g. `"33"` or `"error: division by zero"`
 */
export function calculator(expression: string): string {
  try {
    return formatNumber(evaluate(expression));
  } catch (err) {
    if (err instanceof CalculatorError) return `error: ${err.message}`;
    throw err;
  }
}
