/**
 * @module Writes the calculator dataset, `data/train.jsonl` and `data/val.jsonl`, from a seed. Deterministic: the
 * committed files are exactly what `npx tsx examples/calculator/generate-data.ts` writes with the defaults.
 *
 * Usage: `npx tsx examples/calculator/generate-data.ts [--seed 8] [--train 2000] [--val 200] [--out DIR]`
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { DEFAULT_SPLIT, generateSplit, type Problem, type SplitOptions } from "./problems.js";

/** Where the committed dataset lives. */
export const DEFAULT_DATA_DIR = fileURLToPath(new URL("./data/", import.meta.url));

/** One row per line, keys in a fixed order, a newline after the last row. */
function toJsonl(rows: readonly Problem[]): string {
  return rows
    .map(({ data_id, question, answer, level, form }) => JSON.stringify({ data_id, question, answer, level, form }))
    .map((line) => `${line}\n`)
    .join("");
}

/**
 * The dataset files' contents for a split.
 * @param options - seed and sizes (rows)
 * @returns the text of `train.jsonl` and `val.jsonl`
 */
export function renderDatasetFiles(options: SplitOptions = DEFAULT_SPLIT): { train: string; val: string } {
  const { train, val } = generateSplit(options);
  return { train: toJsonl(train), val: toJsonl(val) };
}

/** Parses a whole-number flag, naming it when it is not one. */
function intFlag(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a whole number, got "${text}"`);
  return value;
}

/** Reads the flags, writes both files, prints where. */
function main(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: { seed: { type: "string" }, train: { type: "string" }, val: { type: "string" }, out: { type: "string" } },
  });
  const options: SplitOptions = {
    seed: intFlag("seed", values.seed, DEFAULT_SPLIT.seed),
    trainSize: intFlag("train", values.train, DEFAULT_SPLIT.trainSize),
    valSize: intFlag("val", values.val, DEFAULT_SPLIT.valSize),
  };
  const dir = values.out ?? DEFAULT_DATA_DIR;
  const files = renderDatasetFiles(options);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "train.jsonl"), files.train);
  writeFileSync(join(dir, "val.jsonl"), files.val);
  console.log(`wrote ${options.trainSize} train and ${options.valSize} val problems to ${dir}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    console.error(`generate-data: ${(err as Error).message}`);
    process.exit(2);
  }
}
