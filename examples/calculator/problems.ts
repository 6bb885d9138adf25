/**
 * @module Seeded generator of calculator problems: integer arithmetic written in symbols ("12+7*3") or in words
 * ("twelve plus seven times three"), three difficulty levels, and a disjoint train/val split.
 */
import { numberToWords } from "./number-words.js";
import { Prng } from "./prng.js";

/** A binary operator of the problems. */
export type Op = "+" | "-" | "*" | "/";
/** An expression tree: a whole number, or an operator over two sub-expressions. */
export type Expr = number | { op: Op; left: Expr; right: Expr };
/** How a question is written. */
export type ProblemForm = "symbols" | "words";
/** Difficulty: 1 one operator on small numbers; 2 two operators (precedence); 3 parentheses. */
export type ProblemLevel = 1 | 2 | 3;

/** One dataset row: the rollout input of the calculator agent. */
export interface Problem {
  /** Stable id, `train-0000` / `val-0000`. */
  data_id: string;
  /** The question the agent receives, e.g. `"12+7*3"` or `"twelve plus seven times three"`. */
  question: string;
  /** The exact integer answer. */
  answer: number;
  level: ProblemLevel;
  form: ProblemForm;
}

/** Operand ranges of one level, inclusive. */
interface Ranges {
  add: [number, number];
  mul: [number, number];
  divisor: [number, number];
  quotient: [number, number];
  /** Keep every subtraction's result >= 0. */
  nonNegative: boolean;
}

const LEVEL_RANGES: Record<ProblemLevel, Ranges> = {
  1: { add: [0, 30], mul: [0, 12], divisor: [1, 12], quotient: [0, 12], nonNegative: true },
  2: { add: [0, 50], mul: [2, 12], divisor: [2, 9], quotient: [1, 9], nonNegative: false },
  3: { add: [0, 40], mul: [2, 12], divisor: [2, 9], quotient: [1, 9], nonNegative: false },
};

/** Largest |divisor| of a parenthesised divisor, "a/(b+c)": bounds the dividend, so the question stays short. */
const MAX_COMPOUND_DIVISOR = 20;
/**
 * Longest question, in characters (= bytes, = tokens of the byte-level policy). Word forms of big numbers run long;
 * with this cap a whole solved conversation stays near 200 tokens (see README, "Context budget").
 */
export const MAX_QUESTION_CHARS = 44;
/** Largest |answer| a problem may have. */
const MAX_ABS_ANSWER = 999;

/** Thrown inside one generation attempt when the random choices cannot satisfy a constraint; the caller retries. */
class Retry extends Error {}

const PRECEDENCE: Record<Op, number> = { "+": 1, "-": 1, "*": 2, "/": 2 };
const WORD_OPS: Record<Op, string> = { "+": "plus", "-": "minus", "*": "times", "/": "divided by" };

/** Value of an expression tree (exact: generated divisions always divide evenly). */
export function exprValue(expr: Expr): number {
  if (typeof expr === "number") return expr;
  const left = exprValue(expr.left);
  const right = exprValue(expr.right);
  if (expr.op === "+") return left + right;
  if (expr.op === "-") return left - right;
  return expr.op === "*" ? left * right : left / right;
}

/** True when `child`, at this side of `parent`, must be parenthesised to keep its meaning. */
function needsParens(parent: Op, child: Expr, side: "left" | "right"): boolean {
  if (typeof child === "number") return false;
  const diff = PRECEDENCE[child.op] - PRECEDENCE[parent];
  return diff < 0 || (diff === 0 && side === "right" && (parent === "-" || parent === "/"));
}

/**
 * Writes an expression with the fewest parentheses, in symbols (`"(12+7)*3"`) or words
 * (`"(twelve plus seven) times three"`).
 * @param expr - the tree; leaves must be integers in 0–999 for words
 * @param form - symbols or words
 * @returns the text
 */
export function renderExpr(expr: Expr, form: ProblemForm): string {
  if (typeof expr === "number") return form === "words" ? numberToWords(expr) : String(expr);
  const side = (child: Expr, which: "left" | "right"): string => {
    const text = renderExpr(child, form);
    return needsParens(expr.op, child, which) ? `(${text})` : text;
  };
  const op = form === "words" ? ` ${WORD_OPS[expr.op]} ` : expr.op;
  return `${side(expr.left, "left")}${op}${side(expr.right, "right")}`;
}

/** A tree shape to fill: an operator over two shapes, or "n" for a number. */
type Shape = "n" | { op: Op; left: Shape; right: Shape };

/** Picks the operator shape of a level (see {@link ProblemLevel}). */
function pickShape(rng: Prng, level: ProblemLevel): Shape {
  const all: Op[] = ["+", "-", "*", "/"];
  if (level === 1) return { op: rng.pick(all), left: "n", right: "n" };
  if (level === 2) {
    // Two operators written without parentheses: the tree follows precedence, so "a-b*c" is a-(b*c).
    const [first, second] = [rng.pick(all), rng.pick(all)];
    if (PRECEDENCE[second] > PRECEDENCE[first])
      return { op: first, left: "n", right: { op: second, left: "n", right: "n" } };
    return { op: second, left: { op: first, left: "n", right: "n" }, right: "n" };
  }
  // Level 3: parentheses that change the result, on the left "(a+b)*c" or on the right "a-(b+c)".
  if (rng.next() < 0.5) {
    return { op: rng.pick<Op>(["*", "/"]), left: { op: rng.pick<Op>(["+", "-"]), left: "n", right: "n" }, right: "n" };
  }
  return {
    op: rng.pick<Op>(["-", "*", "/"]),
    left: "n",
    right: { op: rng.pick<Op>(["+", "-"]), left: "n", right: "n" },
  };
}

/** A random operand for a leaf under `parent`. */
function leaf(rng: Prng, ranges: Ranges, parent: Op): number {
  const [min, max] = parent === "*" ? ranges.mul : ranges.add;
  return rng.int(min, max);
}

/** Small divisors of `value` within the level's divisor range (every divisor in range when value is 0). */
function divisorsOf(value: number, ranges: Ranges): number[] {
  const out: number[] = [];
  for (let d = ranges.divisor[0]; d <= ranges.divisor[1]; d += 1) if (value % d === 0) out.push(d);
  return out;
}

/** Fills a division so that it divides evenly: the dividend is built from the divisor or the divisor from it. */
function fillDivision(rng: Prng, ranges: Ranges, shape: { left: Shape; right: Shape }): Expr {
  if (shape.right !== "n") {
    if (shape.left !== "n") throw new Error("fillDivision: shapes with two compound sides are not generated");
    const right = fill(rng, ranges, shape.right);
    const divisor = exprValue(right);
    if (divisor === 0 || Math.abs(divisor) > MAX_COMPOUND_DIVISOR) throw new Retry();
    return { op: "/", left: Math.abs(divisor) * rng.int(ranges.quotient[0], ranges.quotient[1]), right };
  }
  if (shape.left === "n") {
    const divisor = rng.int(ranges.divisor[0], ranges.divisor[1]);
    return { op: "/", left: divisor * rng.int(ranges.quotient[0], ranges.quotient[1]), right: divisor };
  }
  const left = fill(rng, ranges, shape.left);
  const divisors = divisorsOf(exprValue(left), ranges);
  if (divisors.length === 0) throw new Retry();
  return { op: "/", left, right: rng.pick(divisors) };
}

/** Fills a shape with random operands obeying the level's ranges. */
function fill(rng: Prng, ranges: Ranges, shape: Shape): Expr {
  if (shape === "n") throw new Error("fill: a bare number has no operator context");
  if (shape.op === "/") return fillDivision(rng, ranges, shape);
  const side = (child: Shape): Expr => (child === "n" ? leaf(rng, ranges, shape.op) : fill(rng, ranges, child));
  let left = side(shape.left);
  let right = side(shape.right);
  if (shape.op === "-" && ranges.nonNegative && exprValue(left) < exprValue(right)) [left, right] = [right, left];
  return { op: shape.op, left, right };
}

/**
 * Draws one expression of a level; retries internally until every division is exact and |answer| <= 999.
 * @param rng - the seeded source, advanced by this call
 * @param level - difficulty
 * @returns the tree
 */
export function randomExpr(rng: Prng, level: ProblemLevel): Expr {
  for (;;) {
    try {
      const expr = fill(rng, LEVEL_RANGES[level], pickShape(rng, level));
      if (Math.abs(exprValue(expr)) <= MAX_ABS_ANSWER) return expr;
    } catch (err) {
      if (!(err instanceof Retry)) throw err;
    }
  }
}

/** Sizes and seed of a generated dataset. */
export interface SplitOptions {
  seed: number;
  trainSize: number;
  valSize: number;
}

/** The default split: seed 8, 2000 train, 200 val (what data/*.jsonl holds). */
export const DEFAULT_SPLIT: SplitOptions = Object.freeze({ seed: 8, trainSize: 2000, valSize: 200 });

/**
 * Generates a train/val split from one seed. Levels cycle 1, 2, 3 so each split holds them in equal thirds; the form
 * is words or symbols with equal odds; a draw whose question is longer than {@link MAX_QUESTION_CHARS} is redrawn. No
 * expression appears twice anywhere (in either form), so val is disjoint
 * from train. The same options always give the same rows.
 * @param options - seed and sizes (rows)
 * @returns the val rows and the train rows
 */
export function generateSplit(options: SplitOptions = DEFAULT_SPLIT): { train: Problem[]; val: Problem[] } {
  const rng = new Prng(options.seed);
  const seen = new Set<string>();
  const make = (prefix: string, size: number): Problem[] => {
    const rows: Problem[] = [];
    for (let tries = 0; rows.length < size; tries += 1) {
      if (tries > size * 100) throw new RangeError(`generateSplit: cannot find ${size} distinct ${prefix} problems`);
      const level = ((rows.length % 3) + 1) as ProblemLevel;
      const form: ProblemForm = rng.next() < 0.5 ? "symbols" : "words";
      const expr = randomExpr(rng, level);
      const key = renderExpr(expr, "symbols");
      const question = renderExpr(expr, form);
      if (seen.has(key) || question.length > MAX_QUESTION_CHARS) continue;
      seen.add(key);
      const data_id = `${prefix}-${String(rows.length).padStart(4, "0")}`;
      rows.push({ data_id, question, answer: exprValue(expr), level, form });
    }
    return rows;
  };
  const val = make("val", options.valSize);
  return { train: make("train", options.trainSize), val };
}
