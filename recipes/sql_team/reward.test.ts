import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../src/testing/temp-dir.js";
import { executionAccuracy, hasTopLevelOrderBy, resultsMatch } from "./reward.js";

/** A database with repeated cities, a NULL email and REAL scores. */
function peopleDb(): string {
  const path = join(tempDir("sql-team-reward-"), "people.sqlite");
  const db = new Database(path);
  db.exec(`CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, city TEXT, score REAL, email TEXT);
    INSERT INTO person VALUES (1, 'Ada', 'Oslo', 1.5, 'a@x'), (2, 'Ben', 'Lima', 2.25, NULL),
      (3, 'Cy', 'Oslo', 3.0, ''), (4, 'Di', 'Lima', 0.1, 'd@x'), (5, 'Ed', 'Oslo', 0.2, 'e@x');`);
  db.close();
  return path;
}

describe("execution accuracy", () => {
  it("scores the gold query itself 1", async () => {
    const db = peopleDb();
    const gold = "SELECT city, count(*) FROM person GROUP BY city";
    expect(await executionAccuracy(db, gold, gold)).toEqual({ reward: 1 });
  });

  it("scores a query with the wrong filter or column 0", async () => {
    const db = peopleDb();
    const gold = "SELECT name FROM person WHERE score > 1";
    expect(await executionAccuracy(db, "SELECT name FROM person WHERE score >= 0.2", gold)).toEqual({
      reward: 0,
      reason: "result differs",
    });
    expect((await executionAccuracy(db, "SELECT city FROM person WHERE score > 1", gold)).reward).toBe(0);
  });

  it("ignores row order unless the gold query has a top-level ORDER BY", async () => {
    const db = peopleDb();
    const unordered = "SELECT name FROM person WHERE city = 'Oslo'";
    expect((await executionAccuracy(db, `${unordered} ORDER BY name DESC`, unordered)).reward).toBe(1);
    const ordered = "SELECT name FROM person ORDER BY score DESC";
    expect((await executionAccuracy(db, "SELECT name FROM person ORDER BY score ASC", ordered)).reward).toBe(0);
    expect((await executionAccuracy(db, "SELECT name FROM person ORDER BY score * 2 DESC", ordered)).reward).toBe(1);
  });

  it("counts duplicates: DISTINCT rows do not match repeated ones", async () => {
    const db = peopleDb();
    const gold = "SELECT city FROM person";
    expect((await executionAccuracy(db, "SELECT DISTINCT city FROM person", gold)).reward).toBe(0);
    expect((await executionAccuracy(db, "SELECT city FROM person ORDER BY id DESC", gold)).reward).toBe(1);
  });

  it("tells NULL from the empty string and matches NULL with NULL", async () => {
    const db = peopleDb();
    const gold = "SELECT name FROM person WHERE email IS NULL";
    expect((await executionAccuracy(db, "SELECT name FROM person WHERE email = ''", gold)).reward).toBe(0);
    expect(
      (
        await executionAccuracy(
          db,
          "SELECT email FROM person WHERE id < 3",
          "SELECT email FROM person WHERE id IN (1, 2)",
        )
      ).reward,
    ).toBe(1);
    expect(
      (await executionAccuracy(db, "SELECT coalesce(email, '') FROM person", "SELECT email FROM person")).reward,
    ).toBe(0);
  });

  it("compares numbers by value: an integer equals its REAL and floats agree to 10 significant digits", async () => {
    const db = peopleDb();
    expect(
      (await executionAccuracy(db, "SELECT sum(score) * 1.0 / count(*) FROM person", "SELECT avg(score) FROM person"))
        .reward,
    ).toBe(1);
    expect((await executionAccuracy(db, "SELECT 3.0", "SELECT count(*) FROM person WHERE city = 'Oslo'")).reward).toBe(
      1,
    );
    expect(
      (await executionAccuracy(db, "SELECT avg(score) + 0.000001 FROM person", "SELECT avg(score) FROM person")).reward,
    ).toBe(0);
    expect((await executionAccuracy(db, "SELECT '3'", "SELECT 3")).reward).toBe(0);
  });

  it("accepts the columns in another order", async () => {
    const db = peopleDb();
    const gold = "SELECT name, city FROM person";
    expect((await executionAccuracy(db, "SELECT city, name FROM person", gold)).reward).toBe(1);
    expect((await executionAccuracy(db, "SELECT name FROM person", gold)).reward).toBe(0);
  });

  it("scores an error, a statement that returns no rows and a timeout 0, and leaves the database as it was", async () => {
    const db = peopleDb();
    const gold = "SELECT count(*) FROM person";
    const syntax = await executionAccuracy(db, "SELEC name FROM person", gold);
    expect(syntax.reward).toBe(0);
    expect(syntax.reason).toMatch(/syntax error/);
    expect((await executionAccuracy(db, "SELECT nope FROM person", gold)).reason).toMatch(/no such column/);
    expect((await executionAccuracy(db, "DELETE FROM person", gold)).reward).toBe(0);
    const forever = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n";
    expect(await executionAccuracy(db, forever, gold, 300)).toEqual({ reward: 0, reason: "timed out after 300 ms" });
    expect(await executionAccuracy(db, gold, gold)).toEqual({ reward: 1 });
    const check = new Database(db, { readonly: true });
    expect(check.prepare(gold).pluck().get()).toBe(5);
    check.close();
  });

  it("throws when the gold query itself fails", async () => {
    await expect(executionAccuracy(peopleDb(), "SELECT 1", "SELECT nope FROM person")).rejects.toThrow(
      /gold query failed/,
    );
  });
});

describe("hasTopLevelOrderBy", () => {
  it("sees the outer ORDER BY only, not one in a subquery, a string or a quoted name", () => {
    expect(hasTopLevelOrderBy("SELECT a FROM t ORDER BY a")).toBe(true);
    expect(hasTopLevelOrderBy("select a from t order  by a desc limit 1")).toBe(true);
    expect(hasTopLevelOrderBy("SELECT a FROM t WHERE a IN (SELECT a FROM u ORDER BY a LIMIT 3)")).toBe(false);
    expect(hasTopLevelOrderBy("SELECT a FROM t WHERE b = 'order by'")).toBe(false);
    expect(hasTopLevelOrderBy('SELECT "order by" FROM t')).toBe(false);
    expect(hasTopLevelOrderBy("SELECT a FROM t")).toBe(false);
  });
});

describe("resultsMatch", () => {
  it("needs the same number of rows and columns", () => {
    expect(resultsMatch([[1], [2]], [[1]], false)).toBe(false);
    expect(resultsMatch([[1, 2]], [[1]], false)).toBe(false);
    expect(resultsMatch([], [], true)).toBe(true);
  });

  it("permutes columns only where each column's values match", () => {
    expect(
      resultsMatch(
        [
          ["x", 1],
          ["y", 2],
        ],
        [
          [1, "x"],
          [2, "y"],
        ],
        true,
      ),
    ).toBe(true);
    // Each column alone matches, but the rows pair them differently.
    expect(
      resultsMatch(
        [
          ["x", 2],
          ["y", 1],
        ],
        [
          [1, "x"],
          [2, "y"],
        ],
        false,
      ),
    ).toBe(false);
  });
});
