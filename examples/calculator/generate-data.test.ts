import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_DATA_DIR, renderDatasetFiles } from "./generate-data.js";

const run = promisify(execFile);
const script = fileURLToPath(new URL("./generate-data.ts", import.meta.url));
const committed = (name: string): string => readFileSync(join(DEFAULT_DATA_DIR, name), "utf8");

describe("generate-data", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("regenerates exactly the committed train.jsonl and val.jsonl", () => {
    const files = renderDatasetFiles();
    expect(files.train).toBe(committed("train.jsonl"));
    expect(files.val).toBe(committed("val.jsonl"));
  });

  it("commits 2000 train and 200 val rows with the documented fields", () => {
    const rows = committed("train.jsonl")
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(rows).toHaveLength(2000);
    expect(committed("val.jsonl").trimEnd().split("\n")).toHaveLength(200);
    expect(Object.keys(rows[0])).toEqual(["data_id", "question", "answer", "level", "form"]);
  });

  it("writes the same files when run as a script, and names a bad flag", async () => {
    dir = mkdtempSync(join(tmpdir(), "calc-data-"));
    await run(process.execPath, ["--import", "tsx", script, "--out", dir]);
    expect(readFileSync(join(dir, "train.jsonl"), "utf8")).toBe(committed("train.jsonl"));
    expect(readFileSync(join(dir, "val.jsonl"), "utf8")).toBe(committed("val.jsonl"));
    await expect(run(process.execPath, ["--import", "tsx", script, "--train", "lots"])).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining("--train must be a whole number"),
    });
  });
});
