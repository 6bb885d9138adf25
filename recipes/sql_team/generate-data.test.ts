import { readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../src/testing/temp-dir.js";
import { DEFAULT_DATA_DIR, generateBenchmark } from "./generate-data.js";
import { executionAccuracy } from "./reward.js";
import { databasePath, readSplit, readTables, type SqlExample } from "./spider-data.js";

const SPLITS = ["train_spider.json", "dev.json"] as const;

/** Every table's rows of a database, as text. */
function dump(path: string): string {
  const db = new Database(path, { readonly: true });
  const tables = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as {
    name: string;
    sql: string;
  }[];
  const text = tables.map((t) => `${t.sql}\n${JSON.stringify(db.prepare(`SELECT * FROM ${t.name}`).raw(true).all())}`);
  db.close();
  return text.join("\n");
}

describe("the shipped benchmark", () => {
  it("is exactly what generate-data.ts writes from its default seed", () => {
    const out = tempDir("sql-team-gen-");
    generateBenchmark(out);
    for (const file of ["tables.json", ...SPLITS, "train.jsonl", "val.jsonl"]) {
      expect(readFileSync(join(out, file), "utf8"), file).toBe(readFileSync(join(DEFAULT_DATA_DIR, file), "utf8"));
    }
    for (const dbId of readTables(join(out, "tables.json")).keys()) {
      expect(dump(databasePath(out, dbId)), dbId).toBe(dump(databasePath(DEFAULT_DATA_DIR, dbId)));
    }
  });

  it("has the Spider layout, graded difficulty, and dev databases apart from train's", () => {
    const train = readSplit(DEFAULT_DATA_DIR, "train_spider.json");
    const dev = readSplit(DEFAULT_DATA_DIR, "dev.json");
    expect(train).toHaveLength(240);
    expect(dev).toHaveLength(60);
    for (const split of [train, dev]) {
      expect(new Set(split.map((e) => e.difficulty))).toEqual(new Set(["easy", "medium", "hard", "extra"]));
      expect(new Set(split.map((e) => e.query)).size).toBe(split.length);
    }
    const trainDbs = new Set(train.map((e) => e.db_id));
    expect(dev.some((e) => trainDbs.has(e.db_id))).toBe(false);
    const jsonl = readFileSync(join(DEFAULT_DATA_DIR, "val.jsonl"), "utf8").trim().split("\n");
    expect(jsonl.map((line) => JSON.parse(line) as SqlExample)).toEqual(dev);
  });

  it("scores every gold query 1 and a wrong query 0 on its own database", async () => {
    for (const split of SPLITS) {
      const examples = readSplit(DEFAULT_DATA_DIR, split);
      for (const [i, e] of examples.entries()) {
        const db = databasePath(DEFAULT_DATA_DIR, e.db_id);
        expect(await executionAccuracy(db, e.query, e.query), `${split} ${i}`).toEqual({ reward: 1 });
        // Every gold query returns rows, so the same query cut to none is wrong.
        const empty = await executionAccuracy(db, `SELECT * FROM (${e.query}) LIMIT 0`, e.query);
        expect(empty, `${split} ${i}`).toEqual({ reward: 0, reason: "result differs" });
      }
    }
  }, 120_000);
});
