/**
 * @module The public Spider layout: `tables.json` (each database's schema), a split (`train_spider.json`,
 * `train_others.json`, `dev.json`: arrays of `{db_id, question, query, …}`) and `database/<db_id>/<db_id>.sqlite`.
 * Reads a split into the recipe's examples, renders a schema for the prompts, and converts a split to the JSONL the
 * trainer reads:
 *
 * `npx tsx recipes/sql_team/spider-data.ts /data/spider dev.json recipes/sql_team/data/spider-dev.jsonl`
 *
 * @see Yu et al., "Spider: A Large-Scale Human-Labeled Dataset for Complex and Cross-Domain Semantic Parsing and
 *   Text-to-SQL Task", arXiv:1809.08887 (the layout), https://yale-lily.github.io/spider
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";

/** One database's schema as `tables.json` holds it (the fields the recipe reads; others are kept out). */
export const SpiderTableSchema = z.object({
  db_id: z.string().min(1),
  table_names_original: z.array(z.string()),
  /** `[table index, column name]`; entry 0 is `[-1, "*"]`. */
  column_names_original: z.array(z.tuple([z.number().int(), z.string()])),
  column_types: z.array(z.string()),
  primary_keys: z.array(z.union([z.number().int(), z.array(z.number().int())])).default([]),
  /** `[column index, referenced column index]`. */
  foreign_keys: z.array(z.tuple([z.number().int(), z.number().int()])).default([]),
});
/** One database's schema. */
export type SpiderTable = z.infer<typeof SpiderTableSchema>;

/** One question of a split, as the split file holds it (other fields, e.g. `sql`, `query_toks`, are ignored). */
const SpiderRowSchema = z.object({ db_id: z.string().min(1), question: z.string().min(1), query: z.string().min(1) });

/** One example: what a rollout's input holds (`difficulty` only where the split names one, as the shipped one does). */
export interface SqlExample {
  db_id: string;
  question: string;
  query: string;
  difficulty?: string;
}

/** A Spider folder or file that does not have the public layout; the message names the file and the problem. */
export class SpiderLayoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SpiderLayoutError";
  }
}

function readJson(path: string): unknown {
  if (!existsSync(path)) throw new SpiderLayoutError(`${path}: no such file`);
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new SpiderLayoutError(`${path}: not JSON (${(err as Error).message})`);
  }
}

function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new SpiderLayoutError(`${where}: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
}

/**
 * Reads `tables.json`.
 * @param path - the file
 * @returns each database's schema by `db_id`
 * @throws {SpiderLayoutError} naming the file and the entry that does not have the layout
 */
export function readTables(path: string): Map<string, SpiderTable> {
  const tables = parseOrThrow(z.array(SpiderTableSchema), readJson(path), path);
  return new Map(tables.map((table) => [table.db_id, table]));
}

/**
 * The SQLite file of a database in a Spider folder.
 * @param root - the folder holding `tables.json` and `database/`
 * @param dbId - the database
 * @returns `root/database/<db_id>/<db_id>.sqlite`
 */
export function databasePath(root: string, dbId: string): string {
  return join(root, "database", dbId, `${dbId}.sqlite`);
}

/**
 * Reads one split of a Spider folder and checks that every question's database is there.
 * @param root - the folder holding `tables.json`, the split file and `database/`
 * @param split - the split's file name, e.g. `dev.json` or `train_spider.json`
 * @returns the examples, in file order
 * @throws {SpiderLayoutError} for a missing or malformed file, a row without `db_id`/`question`/`query`, or a
 *   `db_id` without a schema in `tables.json` or a `.sqlite` file
 */
export function readSplit(root: string, split: string): SqlExample[] {
  const path = join(root, split);
  const rows = parseOrThrow(z.array(z.unknown()), readJson(path), path);
  const tables = readTables(join(root, "tables.json"));
  return rows.map((raw, i) => {
    const row = parseOrThrow(SpiderRowSchema, raw, `${path} row ${i}`);
    if (!tables.has(row.db_id))
      throw new SpiderLayoutError(`${path} row ${i}: db_id ${row.db_id} is not in tables.json`);
    if (!existsSync(databasePath(root, row.db_id))) {
      throw new SpiderLayoutError(`${path} row ${i}: no database file ${databasePath(root, row.db_id)}`);
    }
    const difficulty = (raw as { difficulty?: unknown }).difficulty;
    const example: SqlExample = { db_id: row.db_id, question: row.question, query: row.query };
    return typeof difficulty === "string" ? { ...example, difficulty } : example;
  });
}

/**
 * A compact schema for a prompt: one line per table, `name(column type, …)`, primary keys marked, then the foreign
 * keys (`orders.customer_id -> customers.id`).
 * @param table - one database's `tables.json` entry
 * @returns the text, tables in `tables.json` order
 */
export function schemaText(table: SpiderTable): string {
  const primary = new Set(table.primary_keys.flat());
  const columnName = (c: number) => {
    const [t, name] = table.column_names_original[c]!;
    return `${table.table_names_original[t]}.${name}`;
  };
  const lines = table.table_names_original.map((name, t) => {
    const columns = table.column_names_original
      .map(([owner, column], c) => ({ owner, column, c }))
      .filter(({ owner }) => owner === t)
      .map(({ column, c }) => `${column} ${table.column_types[c]}${primary.has(c) ? " primary key" : ""}`);
    return `${name}(${columns.join(", ")})`;
  });
  const keys = table.foreign_keys.map(([from, to]) => `${columnName(from)} -> ${columnName(to)}`);
  return keys.length > 0 ? `${lines.join("\n")}\nforeign keys: ${keys.join(", ")}` : lines.join("\n");
}

/** One example per line, keys in a fixed order, a newline after the last. */
export function toJsonl(examples: readonly SqlExample[]): string {
  return examples.map((example) => `${JSON.stringify(example)}\n`).join("");
}

function main(): void {
  const [root, split, out] = process.argv.slice(2);
  if (!root || !split || !out) {
    console.error("usage: spider-data.ts SPIDER_DIR SPLIT.json OUT.jsonl (e.g. /data/spider dev.json dev.jsonl)");
    process.exit(2);
  }
  const examples = readSplit(root, split);
  writeFileSync(out, toJsonl(examples));
  console.log(
    `${examples.length} examples of ${join(root, split)} -> ${out}; agent argument: ${join(root, "tables.json")}`,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  try {
    main();
  } catch (err) {
    console.error(`spider-data: ${(err as Error).message}`);
    process.exit(1);
  }
}
