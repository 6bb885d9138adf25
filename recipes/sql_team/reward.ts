/**
 * @module Execution accuracy: a predicted query scores 1 when it returns the gold query's result on the question's
 * database, else 0. Results compare as multisets of rows (order-insensitive unless the gold query has a top-level
 * ORDER BY), allowing the columns in another order, as the test-suite evaluation of Spider does.
 * @see Zhong, Yu, Klein, "Semantic Evaluation for Text-to-SQL with Distilled Test Suites", arXiv:2010.02840
 */
import { executeQuery, type QueryResult, type SqlValue } from "./execute.js";

/** Relative precision numbers are compared at: `AVG(x)` and `SUM(x) / COUNT(x)` may differ in the last bits. */
const SIGNIFICANT_DIGITS = 10;
/** Column permutations tried at most (8 columns); wider results must keep the gold column order. */
const MAX_PERMUTED_COLUMNS = 8;

/** One value as a comparable key: numbers of any SQLite type by value (3 = 3.0), text and blobs apart from them. */
function valueKey(value: SqlValue): string {
  if (value === null) return "null";
  if (typeof value === "bigint") return `n:${Number(value)}`;
  if (typeof value === "number") return `n:${Number(value.toPrecision(SIGNIFICANT_DIGITS))}`;
  if (typeof value === "string") return `s:${value}`;
  return `b:${value.toString("hex")}`;
}

/**
 * Whether a query ends with an ORDER BY of its outermost SELECT: string literals, quoted names and parenthesised
 * parts (subqueries, function arguments) are removed first, so `WHERE x IN (SELECT … ORDER BY …)` does not count.
 * @param sql - one query
 */
export function hasTopLevelOrderBy(sql: string): boolean {
  let text = sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]/g, " ");
  for (let before = ""; before !== text; ) {
    before = text;
    text = text.replace(/\([^()]*\)/g, " ");
  }
  return /\border\s+by\b/i.test(text);
}

/** Column `c` of every row, as sorted keys (a column's multiset). */
function columnSignature(rows: readonly string[][], c: number): string {
  return JSON.stringify(rows.map((row) => row[c]).sort());
}

/** Every order of `predicted`'s columns whose value multisets match the gold columns one by one. */
function* columnOrders(predicted: readonly string[][], gold: readonly string[][], width: number): Generator<number[]> {
  const goldColumns = Array.from({ length: width }, (_, c) => columnSignature(gold, c));
  const predColumns = Array.from({ length: width }, (_, c) => columnSignature(predicted, c));
  const used = new Array<boolean>(width).fill(false);
  const order: number[] = [];
  function* extend(c: number): Generator<number[]> {
    if (c === width) {
      yield [...order];
      return;
    }
    for (let p = 0; p < width; p++) {
      if (used[p] || predColumns[p] !== goldColumns[c]) continue;
      used[p] = true;
      order.push(p);
      yield* extend(c + 1);
      order.pop();
      used[p] = false;
    }
  }
  if (width > MAX_PERMUTED_COLUMNS) {
    yield Array.from({ length: width }, (_, c) => c);
    return;
  }
  yield* extend(0);
}

/**
 * Whether two results are equal as Spider's test-suite evaluation counts it.
 * @param predicted - rows of the predicted query
 * @param gold - rows of the gold query
 * @param orderMatters - compare row order too (the gold query has a top-level ORDER BY)
 * @returns true when some order of the predicted columns makes the row lists (or multisets) equal
 */
export function resultsMatch(
  predicted: readonly (readonly SqlValue[])[],
  gold: readonly (readonly SqlValue[])[],
  orderMatters: boolean,
): boolean {
  if (predicted.length !== gold.length) return false;
  const width = gold[0]?.length ?? 0;
  if (predicted.some((row) => row.length !== width) || gold.some((row) => row.length !== width)) return false;
  const predKeys = predicted.map((row) => row.map(valueKey));
  const goldKeys = gold.map((row) => row.map(valueKey));
  const goldRows = goldKeys.map((row) => JSON.stringify(row));
  if (!orderMatters) goldRows.sort();
  for (const order of columnOrders(predKeys, goldKeys, width)) {
    const rows = predKeys.map((row) => JSON.stringify(order.map((c) => row[c])));
    if (!orderMatters) rows.sort();
    if (rows.every((row, i) => row === goldRows[i])) return true;
  }
  return false;
}

/** The outcome of scoring one prediction. */
export interface Scored {
  /** 1 or 0. */
  reward: number;
  /** Why 0: the predicted query's error, or `result differs`; absent for 1. */
  reason?: string;
}

/**
 * Execution accuracy of `predictedSql` against `goldSql` on one database.
 * @param dbPath - the question's `.sqlite` file
 * @param predictedSql - the agent's query (an error or a timeout scores 0)
 * @param goldSql - the reference query
 * @param timeoutMs - per-query limit
 * @returns the reward and, for 0, why
 * @throws {Error} when the gold query itself fails: the example is broken, not the prediction
 */
export async function executionAccuracy(
  dbPath: string,
  predictedSql: string,
  goldSql: string,
  timeoutMs = 5000,
): Promise<Scored> {
  const gold = await executeQuery(dbPath, goldSql, { timeoutMs: timeoutMs * 4 });
  if (!gold.ok) throw new Error(`gold query failed on ${dbPath}: ${gold.error}`);
  if (gold.truncated) throw new Error(`gold query on ${dbPath} returns more rows than the comparison reads`);
  const predicted: QueryResult = await executeQuery(dbPath, predictedSql, { timeoutMs, maxRows: gold.rows.length + 1 });
  if (!predicted.ok) return { reward: 0, reason: predicted.error };
  if (!resultsMatch(predicted.rows, gold.rows, hasTopLevelOrderBy(goldSql))) {
    return { reward: 0, reason: "result differs" };
  }
  return { reward: 1 };
}
