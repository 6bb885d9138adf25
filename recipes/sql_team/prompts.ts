/**
 * @module What each role of the SQL team is asked, and how its reply is read: the writer and the rewriter answer with
 * a ```sql block, the checker ends with `THE QUERY IS CORRECT.` or `THE QUERY IS INCORRECT.` (the Agent Lightning
 * Spider agent's protocol: the same three roles, the same block and verdict phrases).
 * @see Agent Lightning, arXiv:2508.03680, §4 (text-to-SQL on Spider: writer, checker, rewriter)
 */
import type { QueryResult, SqlValue } from "./execute.js";

/** Rows of a result shown to the checker and the rewriter. */
const SHOWN_ROWS = 8;
/** Characters of a shown result at most. */
const SHOWN_CHARS = 600;

/** The checker's verdict when it finds no mistake. */
export const CORRECT = "THE QUERY IS CORRECT.";
/** The checker's verdict when it finds one. */
export const INCORRECT = "THE QUERY IS INCORRECT.";

/** The writer's prompt: the schema and the question. */
export function writerPrompt(schema: string, question: string): string {
  return [
    "Write one SQLite query that answers the question. Use only the tables and columns of the schema.",
    `Schema:\n${schema}`,
    `Question: ${question}`,
    "Answer with the query in a ```sql block.",
  ].join("\n\n");
}

/** The checker's prompt: the question, the query and what it returned. */
export function checkerPrompt(schema: string, question: string, query: string, execution: string): string {
  return [
    "Check this SQLite query for mistakes: wrong columns or joins, a missing condition, GROUP BY or ORDER BY, " +
      "NOT IN over NULLs, an error or an implausible result.",
    `Schema:\n${schema}`,
    `Question: ${question}`,
    `Query:\n${query}`,
    `Result:\n${execution}`,
    `List the mistakes, then end with exactly ${CORRECT} or ${INCORRECT}`,
  ].join("\n\n");
}

/** The rewriter's prompt: everything the checker saw, and its feedback. */
export function rewriterPrompt(schema: string, question: string, query: string, execution: string, feedback: string) {
  return [
    "Rewrite the SQLite query so that it answers the question, fixing the mistakes the review names.",
    `Schema:\n${schema}`,
    `Question: ${question}`,
    `Query:\n${query}`,
    `Result:\n${execution}`,
    `Review:\n${feedback}`,
    "Answer with the new query in a ```sql block.",
  ].join("\n\n");
}

/**
 * The query in a reply: the last ```sql (or bare ```) block; without one, the reply from its first SELECT or WITH.
 * @param reply - the model's text
 * @returns the query without a trailing semicolon, or `""` when the reply holds none
 */
export function extractSql(reply: string): string {
  const blocks = [...reply.matchAll(/```(?:sql|sqlite)?\s*\n?([\s\S]*?)```/gi)];
  const block = blocks.at(-1)?.[1];
  const text = block ?? reply.slice(Math.max(0, reply.search(/\b(select|with)\b/i)));
  if (block === undefined && !/\b(select|with)\b/i.test(reply)) return "";
  return text.trim().replace(/;\s*$/, "").trim();
}

/**
 * The checker's verdict.
 * @param reply - the checker's text
 * @returns `correct` when it says the query is correct (and not also incorrect), `incorrect` when it says so, else
 *   `unclear` (which the graph treats as incorrect: the rewriter gets a turn)
 */
export function parseVerdict(reply: string): "correct" | "incorrect" | "unclear" {
  const upper = reply.toUpperCase();
  if (upper.includes("THE QUERY IS INCORRECT")) return "incorrect";
  if (upper.includes("THE QUERY IS CORRECT")) return "correct";
  return "unclear";
}

function cell(value: SqlValue): string {
  if (value === null) return "NULL";
  if (Buffer.isBuffer(value)) return `<${value.length} bytes>`;
  return String(value);
}

/**
 * A result as the checker and rewriter see it: the columns, the first rows (`|`-separated), how many more; or the
 * error.
 * @param result - an execution's outcome
 * @returns at most {@link SHOWN_CHARS} characters
 */
export function formatResult(result: QueryResult): string {
  if (!result.ok) return `Error: ${result.error}`;
  const lines = [
    result.columns.join(" | "),
    ...result.rows.slice(0, SHOWN_ROWS).map((row) => row.map(cell).join(" | ")),
  ];
  const more = result.rows.length - SHOWN_ROWS;
  if (more > 0) lines.push(`(${more}${result.truncated ? "+" : ""} more rows)`);
  if (result.rows.length === 0) lines.push("(no rows)");
  const text = lines.join("\n");
  return text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}…` : text;
}
