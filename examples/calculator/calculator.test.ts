import { describe, expect, it } from "vitest";
import { CalculatorError, calculator, evaluate, formatNumber, MAX_DEPTH, MAX_EXPRESSION_CHARS } from "./calculator.js";

describe("evaluate", () => {
  it("applies * and / before + and -", () => {
    expect(evaluate("12+7*3")).toBe(33);
    expect(evaluate("2*3+4*5")).toBe(26);
    expect(evaluate("20-12/4")).toBe(17);
  });

  it("evaluates operators of equal precedence left to right", () => {
    expect(evaluate("10-4-3")).toBe(3);
    expect(evaluate("48/4/2")).toBe(6);
    expect(evaluate("12/3*2")).toBe(8);
  });

  it("lets parentheses override precedence, nested too", () => {
    expect(evaluate("(12+7)*3")).toBe(57);
    expect(evaluate("2*(3+(4-1)*2)")).toBe(18);
    expect(evaluate("((((5))))")).toBe(5);
  });

  it("reads unary minus and plus, including after an operator", () => {
    expect(evaluate("-3+5")).toBe(2);
    expect(evaluate("3--2")).toBe(5);
    expect(evaluate("4*-(2+1)")).toBe(-12);
    expect(evaluate("+7")).toBe(7);
  });

  it("ignores blanks between tokens", () => {
    expect(evaluate("  12 +\t7 * 3 ")).toBe(33);
  });

  it("divides exactly, giving a fraction when the division is not even", () => {
    expect(evaluate("7/2")).toBe(3.5);
    expect(evaluate("0/5")).toBe(0);
    expect(Object.is(evaluate("0*-1"), 0)).toBe(true); // never -0
  });

  it("rejects division by zero, also when the zero is computed", () => {
    expect(() => evaluate("1/0")).toThrow(new CalculatorError("division by zero"));
    expect(() => evaluate("5/(3-3)")).toThrow("division by zero");
  });

  it.each([
    ["", "empty expression"],
    ["   ", "empty expression"],
    ["2+", "unexpected end"],
    ["(2+3", "missing ')' at 4"],
    ["2+3)", "unbalanced ')' at 3"],
    ["2 3", "unexpected '3' at 2"],
    ["2^3", "unexpected '^' at 1"],
    ["1.5+1", "unexpected '.' at 1"],
    ["process.exit()", "unexpected 'p' at 0"],
    ["2**3", "unexpected '*' at 2"],
  ])("rejects the malformed expression %j with a short reason", (expression, reason) => {
    expect(() => evaluate(expression)).toThrow(new CalculatorError(reason));
  });

  it("refuses values beyond 2^53, where doubles stop being exact", () => {
    expect(() => evaluate("99999999999*99999999999")).toThrow("number too large");
    expect(() => evaluate("9".repeat(20))).toThrow("number too large");
  });

  it("bounds nesting depth and length instead of overflowing the stack", () => {
    const deep = `${"(".repeat(MAX_DEPTH + 1)}1${")".repeat(MAX_DEPTH + 1)}`;
    expect(() => evaluate(deep)).toThrow("too deeply nested");
    expect(evaluate(`${"(".repeat(MAX_DEPTH)}1${")".repeat(MAX_DEPTH)}`)).toBe(1);
    expect(() => evaluate("-".repeat(MAX_DEPTH + 1) + "1")).toThrow("too deeply nested");
    expect(() => evaluate("1+".repeat(MAX_EXPRESSION_CHARS) + "1")).toThrow("expression too long");
  });
});

describe("calculator tool text", () => {
  it("formats integers plainly and fractions to 10 significant digits", () => {
    expect(formatNumber(-4)).toBe("-4");
    expect(formatNumber(3.5)).toBe("3.5");
    expect(formatNumber(1 / 3)).toBe("0.3333333333");
  });

  it("returns the result text, or an error string instead of throwing", () => {
    expect(calculator("(12+7)*3")).toBe("57");
    expect(calculator("10/4")).toBe("2.5");
    expect(calculator("8/0")).toBe("error: division by zero");
    expect(calculator("two plus two")).toBe("error: unexpected 't' at 0");
  });
});
