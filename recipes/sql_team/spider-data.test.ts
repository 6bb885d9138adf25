import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../src/testing/temp-dir.js";
import { databasePath, readSplit, readTables, SpiderLayoutError, schemaText } from "./spider-data.js";

const exec = promisify(execFile);

/** One `tables.json` entry exactly as Spider ships it (concert_singer, trimmed to two tables). */
const CONCERT_SINGER = {
  column_names: [
    [-1, "*"],
    [0, "stadium id"],
    [0, "name"],
    [0, "capacity"],
    [1, "concert id"],
    [1, "concert name"],
    [1, "stadium id"],
  ],
  column_names_original: [
    [-1, "*"],
    [0, "Stadium_ID"],
    [0, "Name"],
    [0, "Capacity"],
    [1, "concert_ID"],
    [1, "concert_Name"],
    [1, "Stadium_ID"],
  ],
  column_types: ["text", "number", "text", "number", "number", "text", "text"],
  db_id: "concert_singer",
  foreign_keys: [[6, 1]],
  primary_keys: [1, 4],
  table_names: ["stadium", "concert"],
  table_names_original: ["stadium", "concert"],
};

/** A split row as Spider ships it, with the fields the loader does not read. */
const ROW = {
  db_id: "concert_singer",
  query: "SELECT count(*) FROM concert",
  query_toks: ["SELECT", "count", "(", "*", ")", "FROM", "concert"],
  query_toks_no_value: ["select", "count", "(", "*", ")", "from", "concert"],
  question: "How many concerts are there?",
  question_toks: ["How", "many", "concerts", "are", "there", "?"],
  sql: { select: [false, [[3, [0, [0, 0, false], null]]]], from: { table_units: [["table_unit", 1]], conds: [] } },
};

/** A Spider folder: tables.json, dev.json and the database file. */
function spiderDir(rows: unknown[] = [ROW]): string {
  const root = tempDir("sql-team-spider-");
  writeFileSync(join(root, "tables.json"), JSON.stringify([CONCERT_SINGER]));
  writeFileSync(join(root, "dev.json"), JSON.stringify(rows));
  mkdirSync(join(root, "database", "concert_singer"), { recursive: true });
  const db = new Database(databasePath(root, "concert_singer"));
  db.exec("CREATE TABLE stadium (Stadium_ID int, Name text, Capacity int); CREATE TABLE concert (concert_ID int)");
  db.close();
  return root;
}

describe("the Spider layout", () => {
  it("reads a split into db_id, question and query, leaving Spider's other fields out", () => {
    expect(readSplit(spiderDir(), "dev.json")).toEqual([
      { db_id: "concert_singer", question: "How many concerts are there?", query: "SELECT count(*) FROM concert" },
    ]);
  });

  it("keeps a difficulty label where the split has one", () => {
    const [example] = readSplit(spiderDir([{ ...ROW, difficulty: "easy" }]), "dev.json");
    expect(example?.difficulty).toBe("easy");
  });

  it("finds each database at database/<db_id>/<db_id>.sqlite", () => {
    expect(databasePath("/data/spider", "concert_singer")).toBe(
      "/data/spider/database/concert_singer/concert_singer.sqlite",
    );
  });

  it("renders a schema with types, primary keys and foreign keys", () => {
    const table = readTables(join(spiderDir(), "tables.json")).get("concert_singer")!;
    expect(schemaText(table)).toBe(
      "stadium(Stadium_ID number primary key, Name text, Capacity number)\n" +
        "concert(concert_ID number primary key, concert_Name text, Stadium_ID text)\n" +
        "foreign keys: concert.Stadium_ID -> stadium.Stadium_ID",
    );
  });

  it("names the file and row of a question without a query, or with an unknown db_id", () => {
    const noQuery = spiderDir([ROW, { db_id: "concert_singer", question: "How many?" }]);
    expect(() => readSplit(noQuery, "dev.json")).toThrow(/dev\.json row 1: query: /);
    const unknown = spiderDir([{ ...ROW, db_id: "flights" }]);
    expect(() => readSplit(unknown, "dev.json")).toThrow("row 0: db_id flights is not in tables.json");
  });

  it("refuses a split whose database file is missing, and a missing tables.json", () => {
    const root = spiderDir();
    rmSync(join(root, "database"), { recursive: true });
    expect(() => readSplit(root, "dev.json")).toThrow(/no database file .*concert_singer\.sqlite/);
    rmSync(join(root, "tables.json"));
    expect(() => readSplit(root, "dev.json")).toThrow(SpiderLayoutError);
    expect(() => readSplit(root, "train_spider.json")).toThrow(/train_spider\.json: no such file/);
  });

  it("converts a split to the trainer's JSONL from the command line", async () => {
    const root = spiderDir();
    const out = join(root, "dev.jsonl");
    const script = fileURLToPath(new URL("./spider-data.ts", import.meta.url));
    const { stdout } = await exec(process.execPath, ["--import", "tsx", script, root, "dev.json", out]);
    expect(stdout).toContain("1 examples of");
    expect(readFileSync(out, "utf8")).toBe(
      '{"db_id":"concert_singer","question":"How many concerts are there?","query":"SELECT count(*) FROM concert"}\n',
    );
  });
});
