/**
 * @module `npm run bench -- mismatch-compare`: sampler–trainer mismatch correction measured on the flaky-lookup
 * example (examples/flaky-lookup) with a sampler made deliberately different from the trainer: the gateway samples the
 * training rollouts at `--train-temperature T` (0.7 by default) and records the logprobs of the distribution it
 * sampled from (softmax(logits / T)), while the trainer scores every token at temperature 1. Each arm and seed trains
 * one policy with `arclight train` (gateway child, embedded engine, local controller, the agent compiled to JavaScript
 * in reused processes), arms interleaved per seed so load drifts hit them alike. Writes per arm the reward, entropy,
 * mismatch-KL and masked-fraction curves (`curves-ARM.csv`: mean, min, max over seeds per step) and one table
 * (`table.md`) under runs/mismatch-compare/.
 * Arms (docs/torch-engine.md, "Sampler–trainer mismatch"):
 * - `none`: the sync default — the sampler's logprobs are π_old, no correction;
 * - `recompute`: π_old recomputed by the trainer, weights 1 (the ratio is measured, not used);
 * - `tis`: π_old recomputed, token-level truncated IS min(π_old/π_sampler, 2);
 * - `mis`: π_old recomputed, token-level truncated IS and masked IS (tokens with a ratio outside [0.5, 2] dropped);
 * - `matched`: sampler at temperature 1, π_old recomputed, token TIS (the reference without a mismatch).
 * Flags: `--seeds N` (3), `--first-seed N` (0), `--steps N` (7), `--groups N` inputs per step (6), `--n N`
 * rollouts per input (4), `--lr X` (0.01), `--temperature T` (0.7), `--arms a,b` (none,tis,mis), `--tag NAME`
 * (a suffix for the output files), `--report results.json,results-B.json` (no training: the table and curves of
 * earlier batches, merged, under `--tag`).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { makeDirs } from "../src/fs/make-dirs.js";
import {
  atStep,
  compiledFlakyLookupAgent,
  curveRows,
  FLAKY_LOOKUP,
  flag,
  fmt,
  load,
  noiseLine,
  ROOT,
  runShape,
  stats,
  tailMean,
  trainRun,
} from "./compare/arm-runs.js";

const OUT = join(ROOT, "runs", "mismatch-compare");
const {
  seeds: SEEDS,
  firstSeed: FIRST_SEED,
  steps: STEPS,
  groups: GROUPS,
  groupSize: GROUP_SIZE,
  lr: LR,
  tag: TAG,
} = runShape(3);
const TEMPERATURE = Number(flag("temperature", "0.7"));

/** One arm: a name, the trainer keys it sets on top of the example's YAML, and its training-rollout temperature. */
interface Arm {
  name: string;
  keys: Record<string, unknown>;
  temperature: number;
}

const RECOMPUTE = { recompute_old_logprobs: true, mask_level: "none" };
const ALL_ARMS: Arm[] = [
  { name: "none", keys: { mismatch: { recompute_old_logprobs: false } }, temperature: TEMPERATURE },
  { name: "recompute", keys: { mismatch: { ...RECOMPUTE, is_level: "none" } }, temperature: TEMPERATURE },
  {
    name: "tis",
    keys: { mismatch: { ...RECOMPUTE, is_level: "token" }, loss: { tis_cap: 2 } },
    temperature: TEMPERATURE,
  },
  {
    name: "mis",
    keys: {
      mismatch: { recompute_old_logprobs: true, is_level: "token", mask_level: "token", mask_low: 0.5, mask_high: 2 },
      loss: { tis_cap: 2 },
    },
    temperature: TEMPERATURE,
  },
  { name: "matched", keys: { mismatch: { ...RECOMPUTE, is_level: "token" }, loss: { tis_cap: 2 } }, temperature: 1 },
];
const ONLY = flag("arms", "none,tis,mis");
const ARMS = ALL_ARMS.filter((arm) => ONLY.split(",").includes(arm.name));

/** What one run gave, per step. */
interface RunResult {
  arm: string;
  seed: number;
  reward: (number | null)[];
  entropy: (number | null)[];
  /** `mismatch/kl`: mean k3 estimate of KL(π_sampler ‖ π_old), nats per token (null without recomputation). */
  kl: (number | null)[];
  maskedFraction: (number | null)[];
  ratioP05: (number | null)[];
  ratioP95: (number | null)[];
  wallS: number;
  load1: number;
  ok: boolean;
}

/** Writes one run's YAML: the example's, with the budget, data, compiled agent and the arm's keys. */
function writeConfig(arm: Arm, seed: number, name: string, agent: string): string {
  const base = parse(readFileSync(join(FLAKY_LOOKUP, "train.yaml"), "utf8")) as Record<string, unknown>;
  const controller = base.controller as Record<string, unknown>;
  const config = {
    ...base,
    name,
    seed,
    data: { train_path: join(FLAKY_LOOKUP, "data", "train.jsonl") },
    controller: { ...controller, command: [], agent_class: `${agent}:flakyLookupRollout`, reuse_processes: true },
    optimizer: { learning_rate: LR, weight_decay: 0 },
    train_batch_size: GROUPS,
    n: GROUP_SIZE,
    total_steps: STEPS,
    val_interval: 0,
    checkpoint_interval: 0,
    ...arm.keys,
  };
  const path = join(OUT, `${name}.yaml`);
  writeFileSync(path, stringify(config));
  return path;
}

function runArm(arm: Arm, seed: number, agent: string): RunResult {
  const name = `mm-${arm.name}-s${seed}`;
  const run = trainRun(name, writeConfig(arm, seed, name, agent), seed, [
    "--train-temperature",
    String(arm.temperature),
  ]);
  const series = (key: string) => run.metrics.map((m) => m[key] ?? null);
  return {
    arm: arm.name,
    seed,
    reward: series("reward/mean"),
    entropy: series("entropy"),
    kl: series("mismatch/kl"),
    maskedFraction: series("mismatch/masked_fraction"),
    ratioP05: series("mismatch/ratio_p05"),
    ratioP95: series("mismatch/ratio_p95"),
    wallS: run.wallS,
    load1: run.load1,
    ok: run.ok,
  };
}

type SeriesKey = "reward" | "entropy" | "kl" | "maskedFraction";

/** Per-arm curves, step by step over seeds: `curves-ARM.csv`. */
function writeCurves(arm: string, runs: readonly RunResult[]): void {
  const keys: SeriesKey[] = ["reward", "entropy", "kl", "maskedFraction"];
  const rows = [`step,${keys.flatMap((k) => [`${k}_mean`, `${k}_min`, `${k}_max`]).join(",")}`];
  for (let step = 0; step < STEPS; step++) {
    const cells = keys.flatMap((key) => {
      const s = stats(
        atStep(
          runs.map((r) => r[key]),
          step,
        ),
      );
      return [s?.mean, s?.min, s?.max];
    });
    rows.push([step + 1, ...cells].map((v) => (typeof v === "number" ? v.toFixed(4) : "")).join(","));
  }
  writeFileSync(join(OUT, `curves-${arm}${TAG}.csv`), `${rows.join("\n")}\n`);
}

/** The table: per arm, end-of-run reward, entropy, and the mismatch the trainer measured; then the curves. */
function writeTable(results: readonly RunResult[]): string {
  const lines = [
    "| Arm | Sampler T | Runs | Train reward, last 3 steps: mean (min–max), sd | Entropy step 1 → last (nats) | Mismatch KL, mean over steps (nats/token) | Ratio p05–p95 | Masked fraction | Wall per run (median) |",
    "|---|---|---|---|---|---|---|---|---|",
  ];
  const sds: number[] = [];
  const byArm = (arm: Arm) => results.filter((r) => r.arm === arm.name && r.ok);
  const all = (runs: readonly RunResult[], key: keyof RunResult) =>
    stats(runs.flatMap((r) => (r[key] as (number | null)[]).filter((v): v is number => typeof v === "number")));
  for (const arm of ARMS) {
    const runs = byArm(arm);
    const train = stats(runs.flatMap((r) => (tailMean(r.reward, 3) === null ? [] : [tailMean(r.reward, 3)!])));
    const e0 = stats(
      atStep(
        runs.map((r) => r.entropy),
        0,
      ),
    );
    const e1 = stats(
      atStep(
        runs.map((r) => r.entropy),
        STEPS - 1,
      ),
    );
    const [kl, masked, p05, p95] = [
      all(runs, "kl"),
      all(runs, "maskedFraction"),
      all(runs, "ratioP05"),
      all(runs, "ratioP95"),
    ];
    const walls = runs.map((r) => r.wallS).sort((a, b) => a - b);
    if (train && train.n >= 2) sds.push(train.sd);
    const cell = (s: ReturnType<typeof stats>) =>
      s ? `${fmt(s.mean)} (${fmt(s.min)}–${fmt(s.max)}), ${fmt(s.sd)}` : "-";
    lines.push(
      `| ${arm.name} | ${arm.temperature} | ${runs.length} | ${cell(train)} | ${fmt(e0?.mean)} → ${fmt(e1?.mean)} | ` +
        `${kl ? `${kl.mean.toFixed(4)} (${kl.min.toFixed(4)}–${kl.max.toFixed(4)})` : "not measured"} | ` +
        `${p05 && p95 ? `${fmt(p05.mean)}–${fmt(p95.mean)}` : "-"} | ${masked ? fmt(masked.mean) : "-"} | ` +
        `${walls.length ? walls[Math.floor(walls.length / 2)]!.toFixed(0) : "-"} s |`,
    );
  }
  const n = Math.max(1, Math.min(...ARMS.map((arm) => byArm(arm).length)));
  const curves = (key: SeriesKey) => new Map(ARMS.map((arm) => [arm.name, byArm(arm).map((r) => r[key])]));
  lines.push(
    "",
    noiseLine(sds, n),
    "",
    ...curveRows(curves("reward"), STEPS, "Train reward"),
    "",
    ...curveRows(curves("entropy"), STEPS, "Entropy (nats)"),
    "",
    ...curveRows(curves("kl"), STEPS, "Mismatch KL (nats/token)"),
    "",
    ...curveRows(curves("maskedFraction"), STEPS, "Masked fraction"),
  );
  const table = lines.join("\n");
  writeFileSync(join(OUT, `table${TAG}.md`), `${table}\n`);
  return table;
}

function writeAll(results: readonly RunResult[]): string {
  for (const arm of ARMS)
    writeCurves(
      arm.name,
      results.filter((r) => r.arm === arm.name && r.ok),
    );
  return writeTable(results);
}

function main(): void {
  makeDirs(OUT);
  const reportFiles = flag("report", "");
  if (reportFiles !== "") {
    const results = reportFiles
      .split(",")
      .flatMap((file) => JSON.parse(readFileSync(join(OUT, file), "utf8")) as RunResult[]);
    console.log(writeAll(results));
    return;
  }
  const agent = compiledFlakyLookupAgent(join(OUT, "build"));
  console.log(
    `mismatch-compare: ${ARMS.length} arms x ${SEEDS} seeds, ${STEPS} steps of ${GROUPS} inputs x ${GROUP_SIZE} ` +
      `rollouts, learning rate ${LR}, sampler temperature ${TEMPERATURE} (trainer 1); load ${load()}`,
  );
  const resultsPath = join(OUT, `results${TAG}.json`);
  const results: RunResult[] = [];
  for (let seed = FIRST_SEED; seed < FIRST_SEED + SEEDS; seed++) {
    for (const arm of ARMS) {
      const r = runArm(arm, seed, agent);
      results.push(r);
      console.log(
        `${arm.name.padEnd(10)} seed ${seed}  reward ${r.reward.map(fmt).join(" ")}  entropy ${r.entropy.map(fmt).join(" ")}` +
          `  kl ${r.kl.map((v) => (v === null ? "-" : v.toFixed(4))).join(" ")}  masked ${r.maskedFraction.map(fmt).join(" ")}` +
          `  ${r.wallS.toFixed(0)} s  load ${r.load1.toFixed(2)}`,
      );
      writeFileSync(resultsPath, `${JSON.stringify(results, null, 2)}\n`);
      writeAll(results);
    }
  }
  console.log(writeAll(results));
  console.log(`load at the end: ${load()}`);
}

main();
