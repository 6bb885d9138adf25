import { describe, expect, it } from "vitest";
import { extractSql, formatResult, parseVerdict } from "./prompts.js";

describe("extractSql", () => {
  it("takes the last sql block, without its semicolon", () => {
    expect(extractSql("First try:\n```sql\nSELECT 1\n```\nBetter:\n```sql\nSELECT a FROM t;\n```")).toBe(
      "SELECT a FROM t",
    );
    expect(extractSql("```\nSELECT b FROM u\n```")).toBe("SELECT b FROM u");
  });

  it("falls back to the text from the first SELECT or WITH, and gives nothing without one", () => {
    expect(extractSql("The query is SELECT count(*) FROM t;")).toBe("SELECT count(*) FROM t");
    expect(extractSql("with x as (select 1) select * from x")).toBe("with x as (select 1) select * from x");
    expect(extractSql("I cannot answer that.")).toBe("");
  });
});

describe("parseVerdict", () => {
  it("reads the checker's closing phrase in any case; incorrect wins over correct; anything else is unclear", () => {
    expect(parseVerdict("No mistakes.\nTHE QUERY IS CORRECT.")).toBe("correct");
    expect(parseVerdict("The join is wrong. The query is incorrect.")).toBe("incorrect");
    expect(parseVerdict("THE QUERY IS CORRECT. Actually, THE QUERY IS INCORRECT.")).toBe("incorrect");
    expect(parseVerdict("looks fine")).toBe("unclear");
  });
});

describe("formatResult", () => {
  it("shows columns, the first rows with NULL spelled out, and how many more", () => {
    const rows = Array.from({ length: 10 }, (_, i) => [i, i % 2 === 0 ? null : `v${i}`]);
    const text = formatResult({ ok: true, columns: ["n", "v"], rows, truncated: false });
    expect(text.split("\n")).toEqual([
      "n | v",
      "0 | NULL",
      "1 | v1",
      "2 | NULL",
      "3 | v3",
      "4 | NULL",
      "5 | v5",
      "6 | NULL",
      "7 | v7",
      "(2 more rows)",
    ]);
  });

  it("shows an error and an empty result as such", () => {
    expect(formatResult({ ok: false, error: "no such table: x" })).toBe("Error: no such table: x");
    expect(formatResult({ ok: true, columns: ["a"], rows: [], truncated: false })).toBe("a\n(no rows)");
  });
});
