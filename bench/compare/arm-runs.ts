/**
 * @module Shared parts of the arm-by-seed training comparisons (bench/objectives-compare.ts,
 * bench/mismatch-compare.ts, bench/per-agent-compare.ts): an example's agent compiled to JavaScript, one `arclight train` run and its
 * metrics.jsonl, and the statistics and formatting of their tables.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const FLAKY_LOOKUP = join(ROOT, "examples", "flaky-lookup");
/** The CLI, compiled (`npm run build`). */
const CLI = join(ROOT, "bin", "arclight.js");

/** The value after `--name` on the command line, or the fallback. */
export function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

/** The run shape every comparison bench takes by flag: seeds, steps, groups × `--n` rollouts, learning rate, tag. */
export function runShape(defaultSeeds: number) {
  return {
    seeds: Number(flag("seeds", String(defaultSeeds))),
    firstSeed: Number(flag("first-seed", "0")),
    steps: Number(flag("steps", "7")),
    groups: Number(flag("groups", "6")),
    groupSize: Number(flag("n", "4")),
    lr: Number(flag("lr", "0.01")),
    tag: flag("tag", ""),
  };
}

/** Non-empty JSON lines of a file. */
export function jsonLines(path: string): string[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "");
}

/**
 * The flaky-lookup agent compiled to plain JavaScript with tsc under `outDir` (again when a source is newer), to run
 * as an `agent_class` in reused processes.
 * @returns the compiled agent.js
 */
export function compiledFlakyLookupAgent(outDir: string): string {
  return compiledExampleAgent("flaky-lookup", ["agent.ts", "task.ts"], outDir);
}

/**
 * An example's `agent.ts` compiled to plain JavaScript with tsc under `outDir` (again when one of `sources`, files of
 * the example, is newer): tsx would compile it again in every rollout process, about 0.4 s of CPU each.
 * @returns the compiled agent.js
 */
export function compiledExampleAgent(example: string, sources: readonly string[], outDir: string): string {
  const dir = join(ROOT, "examples", example);
  const compiled = join(outDir, "examples", example, "agent.js");
  const files = sources.map((file) => join(dir, file));
  const fresh = existsSync(compiled) && files.every((src) => statSync(src).mtimeMs < statSync(compiled).mtimeMs);
  if (fresh) return compiled;
  const tsc = spawnSync(
    process.execPath,
    [
      join(ROOT, "node_modules", "typescript", "bin", "tsc"),
      ...["--outDir", outDir, "--rootDir", ROOT, "--module", "nodenext", "--moduleResolution", "nodenext"],
      ...["--target", "es2022", "--skipLibCheck", "--strict", join(dir, "agent.ts")],
    ],
    { cwd: ROOT, encoding: "utf8" },
  );
  if (tsc.status !== 0) throw new Error(`tsc examples/${example}/agent.ts failed: ${tsc.stdout}${tsc.stderr}`);
  return compiled;
}

/** One finished `arclight train` run: its metrics lines, wall time, load at the start and exit. */
export interface TrainRun {
  metrics: Record<string, number | null>[];
  wallS: number;
  load1: number;
  ok: boolean;
}

/**
 * Runs `arclight train CONFIG --engine-seed SEED --val-temperature 0 ...extraArgs` into runs/NAME (emptied first) and
 * reads its metrics.jsonl (empty, with the child's stderr tail printed, when there is none).
 */
export function trainRun(name: string, config: string, seed: number, extraArgs: readonly string[] = []): TrainRun {
  const runDir = join(ROOT, "runs", name);
  rmSync(runDir, { recursive: true, force: true });
  const started = performance.now();
  const load1 = loadavg()[0] ?? 0;
  const args = [CLI, "train", config, "--engine-seed", String(seed), "--val-temperature", "0", ...extraArgs];
  const child = spawnSync(process.execPath, args, { cwd: ROOT, encoding: "utf8", timeout: 1_800_000 });
  const wallS = (performance.now() - started) / 1000;
  let metrics: Record<string, number | null>[] = [];
  try {
    metrics = jsonLines(join(runDir, "metrics.jsonl")).map((line) => JSON.parse(line) as Record<string, number | null>);
  } catch {
    console.error(`${name}: no metrics (exit ${child.status}): ${child.stderr.slice(-800)}`);
  }
  return { metrics, wallS, load1, ok: child.status === 0 };
}

/** Summary of a list of numbers. */
export interface Stats {
  mean: number;
  min: number;
  max: number;
  /** Sample standard deviation (0 for one value). */
  sd: number;
  n: number;
}

/** Mean, min, max and sample standard deviation of a list (null when empty). */
export function stats(values: readonly number[]): Stats | null {
  if (values.length === 0) return null;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const sd = values.length < 2 ? 0 : Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (values.length - 1));
  return { mean, min: Math.min(...values), max: Math.max(...values), sd, n: values.length };
}

/** A number with 3 decimals, `-` when missing. */
export const fmt = (v: number | null | undefined) => (v === null || v === undefined ? "-" : v.toFixed(3));

/** The 1, 5 and 15 minute load averages. */
export const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** Mean of a run's last `k` finite values of a series (the end of a curve, less noisy than its last point). */
export function tailMean(series: readonly (number | null)[], k: number): number | null {
  const tail = series.filter((v): v is number => typeof v === "number").slice(-k);
  return tail.length === 0 ? null : tail.reduce((a, b) => a + b, 0) / tail.length;
}

/** The finite values of a series at one step over several runs. */
export function atStep(series: readonly (readonly (number | null)[])[], step: number): number[] {
  return series.flatMap((s) => (typeof s[step] === "number" ? [s[step] as number] : []));
}

/**
 * Markdown rows: per arm, a series' mean over seeds at each step, with the seeds' min–max at the last step.
 * @param arms - arm name → each seed's series
 */
export function curveRows(arms: ReadonlyMap<string, (number | null)[][]>, steps: number, title: string): string[] {
  const cols = Array.from({ length: steps }, (_, i) => i + 1);
  const rows = [
    `| ${title}, mean over seeds | ${cols.join(" | ")} | last step min–max |`,
    `|---|${cols.map(() => "---").join("|")}|---|`,
  ];
  for (const [arm, series] of arms) {
    const last = stats(atStep(series, steps - 1));
    rows.push(
      `| ${arm} | ${cols.map((step) => fmt(stats(atStep(series, step - 1))?.mean)).join(" | ")} | ${fmt(last?.min)}–${fmt(last?.max)} |`,
    );
  }
  return rows;
}

/**
 * The seed-noise line under a table: pooled sd over seeds of the end-of-run train reward, and the smallest gap in two
 * arms' means that stands out of it at about 95% (~2·sd·sqrt(2/n) for n seeds each).
 */
export function noiseLine(sds: readonly number[], n: number): string {
  const sd = sds.length ? Math.sqrt(sds.reduce((a, s) => a + s * s, 0) / sds.length) : 0;
  return (
    `Seed noise: pooled sd over seeds of the end-of-run train reward ${fmt(sd)}; two arms of ${n} seeds differ ` +
    `beyond noise (about 95%) when their means differ by more than ${fmt(2 * sd * Math.sqrt(2 / Math.max(1, n)))}.`
  );
}
