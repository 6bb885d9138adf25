/**
 * @module Writes the generated benchmark in the public Spider layout, deterministic from a seed: one SQLite database
 * per domain (`database/<db_id>/<db_id>.sqlite`), `tables.json`, `train_spider.json` (questions on college, retail
 * and library) and `dev.json` (on aviation: as in Spider, the dev databases are not seen in training), plus the
 * trainer's `train.jsonl` / `val.jsonl` (the same questions, one per line). Every gold query returns rows.
 *
 * Usage: `npx tsx recipes/sql_team/generate-data.ts [--seed 51] [--train 240] [--dev 60] [--out DIR]`
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { Prng } from "../../examples/calculator/prng.js";
import { columnsOf, DOMAINS, type Domain, generateRows } from "./domains.js";
import { type Difficulty, type Question, TEMPLATES } from "./questions.js";
import { databasePath, type SpiderTable, type SqlExample, toJsonl } from "./spider-data.js";

/** Where the shipped benchmark lives. */
export const DEFAULT_DATA_DIR = fileURLToPath(new URL("./data/", import.meta.url));

/** The databases of each split. */
const SPLIT_DBS = { train: ["college", "retail", "library"], dev: ["aviation"] } as const;

/** Share of each level, near Spider dev's (24 / 43 / 17 / 16 %). */
const LEVEL_WEIGHTS: readonly [Difficulty, number][] = [
  ["easy", 0.25],
  ["medium", 0.4],
  ["hard", 0.2],
  ["extra", 0.15],
];

/** Generator settings. */
export interface GenerateOptions {
  seed: number;
  /** Questions in `train_spider.json`. */
  train: number;
  /** Questions in `dev.json`. */
  dev: number;
}

/** The shipped benchmark's settings. */
export const DEFAULT_OPTIONS: GenerateOptions = { seed: 51, train: 240, dev: 60 };

/** Creates one domain's database file (replacing any) and fills it from `rng`. */
function writeDatabase(root: string, domain: Domain, rng: Prng): void {
  const path = databasePath(root, domain.dbId);
  rmSync(join(root, "database", domain.dbId), { recursive: true, force: true });
  mkdirSync(join(root, "database", domain.dbId), { recursive: true });
  const db = new Database(path);
  try {
    db.transaction(() => {
      for (const e of domain.entities) {
        const columns = columnsOf(domain, e);
        db.exec(`CREATE TABLE ${e.table} (${columns.map((c) => `${c.name} ${c.sqlType}`).join(", ")})`);
        const insert = db.prepare(`INSERT INTO ${e.table} VALUES (${columns.map((c) => `@${c.name}`).join(", ")})`);
        for (const row of generateRows(domain, e, rng)) insert.run(row);
      }
    })();
  } finally {
    db.close();
  }
}

/** The domain's `tables.json` entry, built from its columns as Spider's is from its databases. */
function tableEntry(domain: Domain): SpiderTable {
  const columnNames: [number, string][] = [[-1, "*"]];
  const columnTypes = ["text"];
  const primaryKeys: number[] = [];
  const indexOf = new Map<string, number>();
  domain.entities.forEach((e, t) => {
    for (const column of columnsOf(domain, e)) {
      if (column.name === "id") primaryKeys.push(columnNames.length);
      indexOf.set(`${e.table}.${column.name}`, columnNames.length);
      columnNames.push([t, column.name]);
      columnTypes.push(column.spiderType);
    }
  });
  const foreignKeys = domain.relations.map((r): [number, number] => [
    indexOf.get(`${r.child.table}.${r.foreignKey}`)!,
    indexOf.get(`${r.parent.table}.id`)!,
  ]);
  return {
    db_id: domain.dbId,
    table_names_original: domain.entities.map((e) => e.table),
    column_names_original: columnNames,
    column_types: columnTypes,
    primary_keys: primaryKeys,
    foreign_keys: foreignKeys,
  };
}

/** Spider also carries lower-case, space-separated names beside the original ones. */
function withNaturalNames(
  entry: SpiderTable,
): SpiderTable & { table_names: string[]; column_names: [number, string][] } {
  const natural = (name: string) => name.replaceAll("_", " ");
  return {
    ...entry,
    table_names: entry.table_names_original.map(natural),
    column_names: entry.column_names_original.map(([t, name]) => [t, natural(name)]),
  };
}

function pickLevel(rng: Prng): Difficulty {
  let u = rng.next();
  for (const [level, weight] of LEVEL_WEIGHTS) {
    u -= weight;
    if (u < 0) return level;
  }
  return "extra";
}

/** `count` distinct questions on the given databases, levels drawn by {@link LEVEL_WEIGHTS}, each gold query non-empty. */
function generateQuestions(root: string, dbIds: readonly string[], count: number, rng: Prng): SqlExample[] {
  const examples: SqlExample[] = [];
  const seen = new Set<string>();
  const dbs = new Map(dbIds.map((id) => [id, new Database(databasePath(root, id), { readonly: true })]));
  try {
    for (let attempts = 0; examples.length < count; attempts++) {
      if (attempts > count * 50) throw new Error(`generate-data: only ${examples.length} of ${count} questions`);
      const dbId = dbIds[examples.length % dbIds.length]!;
      const db = dbs.get(dbId)!;
      const domain = DOMAINS.find((d) => d.dbId === dbId)!;
      const column = (sql: string) =>
        db
          .prepare(sql)
          .raw(true)
          .all()
          .map((row) => (row as (string | number)[])[0]!);
      const question: Question | null = rng.pick(TEMPLATES[pickLevel(rng)])({ domain, rng, column });
      if (question === null || seen.has(question.query)) continue;
      if (db.prepare(question.query).all().length === 0) continue;
      seen.add(question.query);
      examples.push({
        db_id: dbId,
        question: question.question,
        query: question.query,
        difficulty: question.difficulty,
      });
    }
  } finally {
    for (const db of dbs.values()) db.close();
  }
  return examples;
}

/**
 * Writes the whole benchmark under `root`.
 * @param root - the folder (created; its `database/` entries of these domains are replaced)
 * @param options - seed and question counts
 * @returns the two splits
 */
export function generateBenchmark(root: string, options: GenerateOptions = DEFAULT_OPTIONS) {
  const rng = new Prng(options.seed);
  mkdirSync(root, { recursive: true });
  for (const domain of DOMAINS) writeDatabase(root, domain, rng);
  writeFileSync(
    join(root, "tables.json"),
    `${JSON.stringify(
      DOMAINS.map((d) => withNaturalNames(tableEntry(d))),
      null,
      1,
    )}\n`,
  );
  const train = generateQuestions(root, SPLIT_DBS.train, options.train, rng);
  const dev = generateQuestions(root, SPLIT_DBS.dev, options.dev, rng);
  writeFileSync(join(root, "train_spider.json"), `${JSON.stringify(train, null, 1)}\n`);
  writeFileSync(join(root, "dev.json"), `${JSON.stringify(dev, null, 1)}\n`);
  writeFileSync(join(root, "train.jsonl"), toJsonl(train));
  writeFileSync(join(root, "val.jsonl"), toJsonl(dev));
  return { train, dev };
}

function main(): void {
  const { values } = parseArgs({
    options: { seed: { type: "string" }, train: { type: "string" }, dev: { type: "string" }, out: { type: "string" } },
  });
  const int = (name: string, text: string | undefined, fallback: number) => {
    if (text === undefined) return fallback;
    const value = Number(text);
    if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a whole number, got "${text}"`);
    return value;
  };
  const options = {
    seed: int("seed", values.seed, DEFAULT_OPTIONS.seed),
    train: int("train", values.train, DEFAULT_OPTIONS.train),
    dev: int("dev", values.dev, DEFAULT_OPTIONS.dev),
  };
  const root = values.out ?? DEFAULT_DATA_DIR;
  const { train, dev } = generateBenchmark(root, options);
  console.log(`${train.length} train + ${dev.length} dev questions, ${DOMAINS.length} databases -> ${root}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  try {
    main();
  } catch (err) {
    console.error(`generate-data: ${(err as Error).message}`);
    process.exit(1);
  }
}
