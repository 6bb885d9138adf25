import { describe, expect, it } from "vitest";
import { evaluate } from "./calculator.js";
import { Prng } from "./prng.js";
import { exprValue, generateSplit, MAX_QUESTION_CHARS, type Problem, randomExpr, renderExpr } from "./problems.js";

const small = { seed: 11, trainSize: 300, valSize: 60 };

/** Number of binary operators in a symbolic expression (a leading "-" cannot occur: operands are >= 0). */
function operatorCount(expression: string): number {
  return (expression.match(/[+\-*/]/g) ?? []).length;
}

describe("Prng", () => {
  it("repeats its sequence for the same seed and differs for another", () => {
    const draw = (seed: number) => {
      const rng = new Prng(seed);
      return Array.from({ length: 20 }, () => rng.next());
    };
    expect(draw(5)).toEqual(draw(5));
    expect(draw(5)).not.toEqual(draw(6));
  });

  it("draws integers within both inclusive bounds, reaching each", () => {
    const rng = new Prng(1);
    const seen = new Set<number>();
    for (let i = 0; i < 500; i += 1) seen.add(rng.int(3, 6));
    expect([...seen].sort()).toEqual([3, 4, 5, 6]);
    expect(() => rng.int(2, 1)).toThrow(RangeError);
    expect(() => rng.pick([])).toThrow(RangeError);
  });
});

describe("renderExpr", () => {
  it("writes only the parentheses that change the meaning", () => {
    const sum = { op: "+" as const, left: 12, right: 7 };
    expect(renderExpr({ op: "*", left: sum, right: 3 }, "symbols")).toBe("(12+7)*3");
    expect(renderExpr({ op: "+", left: sum, right: 3 }, "symbols")).toBe("12+7+3");
    expect(renderExpr({ op: "-", left: 3, right: sum }, "symbols")).toBe("3-(12+7)");
    expect(renderExpr({ op: "+", left: 3, right: { op: "*", left: 4, right: 5 } }, "symbols")).toBe("3+4*5");
  });

  it("writes words with the same parentheses", () => {
    const expr = { op: "/" as const, left: { op: "+" as const, left: 40, right: 2 }, right: 6 };
    expect(renderExpr(expr, "words")).toBe("(forty plus two) divided by six");
    expect(exprValue(expr)).toBe(7);
  });
});

describe("randomExpr", () => {
  it.each([1, 2, 3] as const)("level %i gives integer answers that the calculator agrees with", (level) => {
    const rng = new Prng(level);
    for (let i = 0; i < 300; i += 1) {
      const expr = randomExpr(rng, level);
      const symbols = renderExpr(expr, "symbols");
      expect(Number.isInteger(exprValue(expr))).toBe(true);
      expect(evaluate(symbols)).toBe(exprValue(expr));
    }
  });
});

describe("generateSplit", () => {
  it("gives identical rows for the same seed and different rows for another", () => {
    expect(generateSplit(small)).toEqual(generateSplit(small));
    expect(generateSplit({ ...small, seed: 12 }).train).not.toEqual(generateSplit(small).train);
  });

  it("keeps val and train disjoint, and repeats no question", () => {
    const { train, val } = generateSplit(small);
    expect(train).toHaveLength(300);
    expect(val).toHaveLength(60);
    const questions = [...train, ...val].map((p) => p.question);
    expect(new Set(questions).size).toBe(questions.length);
    const ids = [...train, ...val].map((p) => p.data_id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("cycles levels in equal thirds and mixes both forms at every level", () => {
    const { train } = generateSplit(small);
    for (const level of [1, 2, 3]) {
      const rows = train.filter((p) => p.level === level);
      expect(rows).toHaveLength(100);
      expect(rows.filter((p) => p.form === "words").length).toBeGreaterThan(25);
      expect(rows.filter((p) => p.form === "symbols").length).toBeGreaterThan(25);
    }
  });

  it("matches each level's description", () => {
    const { train } = generateSplit(small);
    const symbols = (level: number): Problem[] => train.filter((p) => p.level === level && p.form === "symbols");
    for (const p of symbols(1)) {
      expect(operatorCount(p.question)).toBe(1);
      expect(p.answer).toBeGreaterThanOrEqual(0);
      expect(evaluate(p.question)).toBe(p.answer);
    }
    for (const p of symbols(2)) {
      expect(operatorCount(p.question)).toBe(2);
      expect(p.question).not.toMatch(/[()]/);
      expect(evaluate(p.question)).toBe(p.answer);
    }
    for (const p of symbols(3)) {
      // Parentheses that change the grouping: a sum or difference under * or /, or on the right of a minus.
      expect(p.question).toMatch(/^(\(\d+[+-]\d+\)[*/]\d+|\d+[-*/]\(\d+[+-]\d+\))$/);
      expect(evaluate(p.question)).toBe(p.answer);
    }
    for (const p of train.filter((row) => row.form === "words")) expect(p.question).toMatch(/^[a-z() -]+$/);
  });

  it("keeps every question within the length cap", () => {
    const { train, val } = generateSplit(small);
    for (const p of [...train, ...val]) expect(p.question.length).toBeLessThanOrEqual(MAX_QUESTION_CHARS);
  });
});
