/**
 * @module `npm run bench -- objectives-compare`: the policy objectives and loss normalisations compared on the
 * flaky-lookup example (examples/flaky-lookup: 1 to 8 model calls a rollout, one row per call). Trains one policy
 * per arm and seed with `arclight train` (its own gateway child, embedded engine, local controller, the agent compiled
 * to JavaScript in reused processes), arms interleaved per seed so load drifts hit them alike, and writes per arm the
 * train-reward and entropy curves (`curves-ARM.csv`: mean, min, max over seeds per step) and one table
 * (`table.md`) under runs/objectives-compare/, with the seed noise the comparison had (standard deviation over seeds
 * and the smallest gap two arms' means could show at about 95%).
 * Arms: `grpo` (rollout-level advantage, per-rollout-mean: the trainer's defaults), `grpo-sample-token` (sample-level
 * advantage, token-mean), `dr_grpo` (no std scaling, token-sum-norm), `gspo`, `cispo` (token-mean, as MiniMax-M1).
 * Flags: `--seeds N` (5), `--first-seed N` (0), `--steps N` (7), `--groups N` inputs per step (6), `--n N`
 * rollouts per input (4), `--val N` validation inputs (48), `--val-interval N` (0: no validation), `--lr X` (0.01),
 * `--arms a,b` (all), `--tag NAME` (a suffix for the output files, so two batches can run apart), `--report
 * results.json,results-B.json` (no training: the table and curves of earlier batches, merged, under `--tag`).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { makeDirs } from "../src/fs/make-dirs.js";
import {
  compiledFlakyLookupAgent,
  curveRows,
  FLAKY_LOOKUP as EXAMPLE,
  flag,
  fmt,
  jsonLines,
  load,
  noiseLine,
  ROOT,
  runShape,
  stats,
  tailMean,
  trainRun,
} from "./compare/arm-runs.js";

const OUT = join(ROOT, "runs", "objectives-compare");
const {
  seeds: SEEDS,
  firstSeed: FIRST_SEED,
  steps: STEPS,
  groups: GROUPS,
  groupSize: GROUP_SIZE,
  lr: LR,
  tag: TAG,
} = runShape(5);
const VAL = Number(flag("val", "48"));
const VAL_INTERVAL = Number(flag("val-interval", "0"));

/** One arm: a name and the trainer keys it sets on top of the example's YAML. */
interface Arm {
  name: string;
  keys: Record<string, unknown>;
}

const ALL_ARMS: Arm[] = [
  { name: "grpo", keys: { advantage: { rollout_level: true }, loss: { aggregation: "per-rollout-mean" } } },
  { name: "grpo-sample-token", keys: { advantage: { rollout_level: false }, loss: { aggregation: "token-mean" } } },
  { name: "dr_grpo", keys: { advantage: { estimator: "dr_grpo" }, loss: { aggregation: "token-sum-norm" } } },
  { name: "gspo", keys: { loss: { objective: "gspo", aggregation: "per-rollout-mean" } } },
  { name: "cispo", keys: { loss: { objective: "cispo", aggregation: "token-mean" } } },
];
const ONLY = flag("arms", "");
const ARMS = ONLY === "" ? ALL_ARMS : ALL_ARMS.filter((arm) => ONLY.split(",").includes(arm.name));

/** Writes one run's YAML: the example's, with the budget, data, compiled agent and the arm's keys. */
function writeConfig(arm: Arm, seed: number, name: string, agent: string, val: string): string {
  const base = parse(readFileSync(join(EXAMPLE, "train.yaml"), "utf8")) as Record<string, unknown>;
  const controller = base.controller as Record<string, unknown>;
  const config = {
    ...base,
    name,
    seed,
    data: { train_path: join(EXAMPLE, "data", "train.jsonl"), val_path: val },
    // The compiled agent in reused processes, instead of the YAML's tsx command line.
    controller: { ...controller, command: [], agent_class: `${agent}:flakyLookupRollout`, reuse_processes: true },
    optimizer: { learning_rate: LR, weight_decay: 0 },
    train_batch_size: GROUPS,
    n: GROUP_SIZE,
    total_steps: STEPS,
    val_interval: VAL_INTERVAL,
    checkpoint_interval: 0,
    ...arm.keys,
  };
  const path = join(OUT, `${name}.yaml`);
  writeFileSync(path, stringify(config));
  return path;
}

/** What one run gave, per step. */
interface RunResult {
  arm: string;
  seed: number;
  reward: (number | null)[];
  entropy: (number | null)[];
  /** Model calls per rollout, mean per step (rows / rollouts: one row per call). */
  callsPerRollout: (number | null)[];
  val: { step: number; reward: number }[];
  wallS: number;
  load1: number;
  ok: boolean;
}

/** Trains one arm with one seed through the CLI and reads its metrics.jsonl. */
function runArm(arm: Arm, seed: number, agent: string, val: string): RunResult {
  const name = `oc-${arm.name.replace(/[^a-z0-9]+/gi, "-")}-s${seed}`;
  const run = trainRun(name, writeConfig(arm, seed, name, agent, val), seed);
  const lines = run.metrics;
  const ratio = (m: Record<string, number | null>) =>
    typeof m.rows === "number" && typeof m["rollouts/trained"] === "number" && m["rollouts/trained"] > 0
      ? m.rows / m["rollouts/trained"]
      : null;
  return {
    arm: arm.name,
    seed,
    reward: lines.map((m) => m["reward/mean"] ?? null),
    entropy: lines.map((m) => m.entropy ?? null),
    callsPerRollout: lines.map(ratio),
    val: lines.flatMap((m) =>
      typeof m["val/reward_mean"] === "number" ? [{ step: m.step as number, reward: m["val/reward_mean"] }] : [],
    ),
    wallS: run.wallS,
    load1: run.load1,
    ok: run.ok,
  };
}

/** Per-arm curves, step by step over seeds: `curves-ARM.csv`. */
function writeCurves(arm: string, runs: readonly RunResult[]): void {
  const rows = ["step,reward_mean,reward_min,reward_max,entropy_mean,entropy_min,entropy_max,calls_per_rollout"];
  for (let step = 0; step < STEPS; step++) {
    const at = (key: "reward" | "entropy" | "callsPerRollout") =>
      stats(runs.flatMap((r) => (typeof r[key][step] === "number" ? [r[key][step] as number] : [])));
    const [reward, entropy, calls] = [at("reward"), at("entropy"), at("callsPerRollout")];
    rows.push(
      [step + 1, reward?.mean, reward?.min, reward?.max, entropy?.mean, entropy?.min, entropy?.max, calls?.mean]
        .map((v) => (typeof v === "number" ? v.toFixed(4) : String(v ?? "")))
        .join(","),
    );
  }
  writeFileSync(join(OUT, `curves-${arm}${TAG}.csv`), `${rows.join("\n")}\n`);
}

/** Per arm, the mean over seeds of a series at each step (markdown rows), with the seeds' min–max at the last. */
function curveTable(results: readonly RunResult[], key: "reward" | "entropy", title: string): string[] {
  const byArm = ARMS.map((arm): [string, (number | null)[][]] => [
    arm.name,
    results.filter((r) => r.arm === arm.name && r.ok).map((r) => r[key]),
  ]);
  return curveRows(new Map(byArm), STEPS, title);
}

/** One markdown table: per arm, final greedy validation and end-of-run train reward (mean, range, sd) and entropy. */
function writeTable(results: readonly RunResult[]): string {
  const validated = results.some((r) => r.val.length > 0);
  const lines = [
    `| Arm | Runs |${validated ? " Val reward, last step: mean (min–max), sd |" : ""} Train reward, last 3 steps: mean (min–max), sd | Entropy step 1 → last (nats) | Calls per rollout | Wall per run (median) |`,
    `|---|---|${validated ? "---|" : ""}---|---|---|---|`,
  ];
  const spreads: number[] = [];
  for (const arm of ARMS) {
    const runs = results.filter((r) => r.arm === arm.name && r.ok);
    const val = stats(runs.flatMap((r) => (r.val.length > 0 ? [r.val.at(-1)!.reward] : [])));
    const train = stats(runs.flatMap((r) => (tailMean(r.reward, 3) === null ? [] : [tailMean(r.reward, 3)!])));
    const e0 = stats(runs.flatMap((r) => (typeof r.entropy[0] === "number" ? [r.entropy[0]] : [])));
    const e1 = stats(runs.flatMap((r) => (tailMean(r.entropy, 1) === null ? [] : [tailMean(r.entropy, 1)!])));
    const calls = stats(runs.flatMap((r) => r.callsPerRollout.filter((v): v is number => typeof v === "number")));
    const walls = runs.map((r) => r.wallS).sort((a, b) => a - b);
    if (train && train.n >= 2) spreads.push(train.sd);
    const cell = (s: ReturnType<typeof stats>) =>
      s ? `${fmt(s.mean)} (${fmt(s.min)}–${fmt(s.max)}), ${fmt(s.sd)}` : "-";
    lines.push(
      `| ${arm.name} | ${runs.length} |${validated ? ` ${cell(val)} |` : ""} ${cell(train)} | ${fmt(e0?.mean)} → ${fmt(e1?.mean)} | ` +
        `${fmt(calls?.mean)} | ${walls.length ? walls[Math.floor(walls.length / 2)]!.toFixed(0) : "-"} s |`,
    );
  }
  const n = Math.max(1, Math.min(...ARMS.map((arm) => results.filter((r) => r.arm === arm.name && r.ok).length)));
  lines.push("", noiseLine(spreads, n));
  lines.push(
    "",
    ...curveTable(results, "reward", "Train reward"),
    "",
    ...curveTable(results, "entropy", "Entropy (nats)"),
  );
  const table = lines.join("\n");
  writeFileSync(join(OUT, `table${TAG}.md`), `${table}\n`);
  return table;
}

/** `--report a.json,b.json`: the table and curves of earlier batches' results, merged (nothing is trained). */
function report(files: string): void {
  const results = files.split(",").flatMap((file) => JSON.parse(readFileSync(join(OUT, file), "utf8")) as RunResult[]);
  for (const arm of ARMS)
    writeCurves(
      arm.name,
      results.filter((r) => r.arm === arm.name && r.ok),
    );
  console.log(writeTable(results));
}

function main(): void {
  makeDirs(OUT);
  const reportFiles = flag("report", "");
  if (reportFiles !== "") {
    report(reportFiles);
    return;
  }
  const agent = compiledFlakyLookupAgent(join(OUT, "build"));
  const val = join(OUT, "val.jsonl");
  writeFileSync(
    val,
    `${jsonLines(join(EXAMPLE, "data", "val.jsonl"))
      .slice(0, VAL)
      .join("\n")}\n`,
  );
  console.log(
    `objectives-compare: ${ARMS.length} arms x ${SEEDS} seeds, ${STEPS} steps of ${GROUPS} inputs x ${GROUP_SIZE} ` +
      `rollouts, learning rate ${LR}; greedy validation on ${VAL} inputs every ${VAL_INTERVAL} steps; load ${load()}`,
  );
  const resultsPath = join(OUT, `results${TAG}.json`);
  const results: RunResult[] = [];
  for (let seed = FIRST_SEED; seed < FIRST_SEED + SEEDS; seed++) {
    for (const arm of ARMS) {
      const r = runArm(arm, seed, agent, val);
      results.push(r);
      console.log(
        `${arm.name.padEnd(18)} seed ${seed}  reward ${r.reward.map(fmt).join(" ")}  entropy ${r.entropy.map(fmt).join(" ")}` +
          `  val ${r.val.map((v) => `${v.step}:${fmt(v.reward)}`).join(" ")}  ${r.wallS.toFixed(0)} s  load ${r.load1.toFixed(2)}`,
      );
      writeFileSync(resultsPath, `${JSON.stringify(results, null, 2)}\n`);
      for (const a of ARMS)
        writeCurves(
          a.name,
          results.filter((x) => x.arm === a.name && x.ok),
        );
      writeTable(results);
    }
  }
  console.log(writeTable(results));
  console.log(`load at the end: ${load()}`);
}

main();
