/**
 * @module `npx tsx bench/per-agent-compare.ts`: one shared policy against a policy per agent on the multi-agent
 * example (writer → checker → rewriter, the checker frozen), arms interleaved per seed, every run from the same warm
 * start (`--init DIR`, the SFT checkpoint of `bench/credit-warm-start.ts`; a fresh tiny policy without it). Prints per
 * arm the train and validation reward curves, each trained agent's rows per step, wall time and the peak resident
 * memory of the `arclight train` process (its engines: the trained policies and the copies serving frozen agents),
 * with the load average. Flags: those of `runShape` (`--seeds` 3, `--steps`, `--groups`, `--n`, `--lr`, `--tag`),
 * `--val-interval N` (2). Results go to `runs/per-agent-compare/results*.json` and `table*.md`.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { parse, stringify } from "yaml";
import { makeDirs } from "../src/fs/make-dirs.js";
import {
  compiledExampleAgent,
  curveRows,
  flag,
  fmt,
  jsonLines,
  load,
  noiseLine,
  ROOT,
  runShape,
  stats,
  tailMean,
} from "./compare/arm-runs.js";

const OUT = join(ROOT, "runs", "per-agent-compare");
const SHAPE = runShape(3);
const VAL_INTERVAL = Number(flag("val-interval", "2"));
const INIT = flag("init", "");
const EXAMPLE = join(ROOT, "examples", "multi-agent");
const ARMS = ["shared", "per_agent"] as const;
type Arm = (typeof ARMS)[number];

/** The example's YAML with this run's shape, absolute data paths, the compiled agent and the arm's policy. */
function writeConfig(arm: Arm, seed: number, name: string, agent: string): string {
  const base = parse(readFileSync(join(EXAMPLE, "train.yaml"), "utf8")) as Record<string, unknown>;
  const config = {
    ...base,
    name,
    seed,
    data: { train_path: join(EXAMPLE, "data", "train.jsonl"), val_path: join(EXAMPLE, "data", "val.jsonl") },
    controller: { ...(base.controller as Record<string, unknown>), command: ["node", agent] },
    optimizer: { learning_rate: SHAPE.lr, weight_decay: 0 },
    train_batch_size: SHAPE.groups,
    n: SHAPE.groupSize,
    total_steps: SHAPE.steps,
    val_interval: VAL_INTERVAL,
    checkpoint_interval: 0,
    agents: { ...(base.agents as Record<string, unknown>), policy: arm },
  };
  const path = join(OUT, `${name}.yaml`);
  writeFileSync(path, stringify(config));
  return path;
}

/** One run's results. */
interface RunResult {
  arm: Arm;
  seed: number;
  reward: (number | null)[];
  val: (number | null)[];
  writerRows: (number | null)[];
  rewriterRows: (number | null)[];
  rows: (number | null)[];
  wallS: number;
  maxRssMiB: number | null;
  load1: number;
}

/**
 * Runs `arclight train` (compiled) under `/usr/bin/time -f %M`, which reports the process's peak resident set size;
 * the embedded engines live in that process, the gateway and agents in others.
 */
function run(arm: Arm, seed: number, agent: string): RunResult {
  const name = `pac-${arm.replace("_", "-")}-s${seed}${SHAPE.tag}`;
  const config = writeConfig(arm, seed, name, agent);
  const runDir = join(ROOT, "runs", name);
  rmSync(runDir, { recursive: true, force: true });
  const args = [process.execPath, join(ROOT, "bin", "arclight.js"), "train", config, "--val-temperature", "0"];
  if (INIT !== "") args.push("--init-from", resolve(INIT));
  const load1 = loadavg()[0] ?? 0;
  const started = performance.now();
  const child = spawnSync("/usr/bin/time", ["-f", "maxrss_kib %M", ...args], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 3_600_000,
  });
  const wallS = (performance.now() - started) / 1000;
  const rss = /maxrss_kib (\d+)/.exec(child.stderr ?? "");
  if (child.status !== 0) console.error(`${name}: exit ${child.status}: ${(child.stderr ?? "").slice(-800)}`);
  let metrics: Record<string, number | null>[] = [];
  try {
    metrics = jsonLines(join(runDir, "metrics.jsonl")).map((line) => JSON.parse(line) as Record<string, number | null>);
  } catch {
    console.error(`${name}: no metrics`);
  }
  const series = (key: string) => metrics.map((m) => m[key] ?? null);
  return {
    arm,
    seed,
    reward: series("reward/mean"),
    val: series("val/reward_mean"),
    // A shared policy reports no per-agent keys; its rows per agent are not split.
    writerRows: series("policy/writer/rows"),
    rewriterRows: series("policy/rewriter/rows"),
    rows: series("rows"),
    wallS,
    maxRssMiB: rss === null ? null : Number(rss[1]) / 1024,
    load1,
  };
}

/** The report: curves per arm, per-agent rows, wall time and memory. */
function report(results: readonly RunResult[]): string {
  const byArm = (pick: (r: RunResult) => (number | null)[]) =>
    new Map(ARMS.map((arm) => [arm, results.filter((r) => r.arm === arm).map(pick)]));
  const lines = [
    `per-agent-compare: ${SHAPE.steps} steps of ${SHAPE.groups} x ${SHAPE.groupSize} rollouts, lr ${SHAPE.lr}, ` +
      `seeds ${SHAPE.firstSeed}-${SHAPE.firstSeed + SHAPE.seeds - 1}, init ${INIT || "fresh tiny"}, load now ${load()}`,
    "",
    ...curveRows(
      byArm((r) => r.reward),
      SHAPE.steps,
      "train reward",
    ),
    "",
    ...curveRows(
      byArm((r) => r.val),
      SHAPE.steps,
      "validation reward (greedy; - where not validated)",
    ),
    "",
    "| arm | rows/step | writer rows/step | rewriter rows/step | end train reward (last 3 steps) | wall s | peak RSS MiB | load at start |",
    "|---|---|---|---|---|---|---|---|",
  ];
  const sds: number[] = [];
  for (const arm of ARMS) {
    const runs = results.filter((r) => r.arm === arm);
    const perStep = (pick: (r: RunResult) => (number | null)[]) =>
      fmt(stats(runs.flatMap((r) => pick(r).filter((v): v is number => typeof v === "number")))?.mean);
    const end = stats(runs.map((r) => tailMean(r.reward, 3)).filter((v): v is number => v !== null));
    if (end) sds.push(end.sd);
    const range = (values: number[]) => `${fmt(Math.min(...values))}–${fmt(Math.max(...values))}`;
    lines.push(
      `| ${arm} | ${perStep((r) => r.rows)} | ${perStep((r) => r.writerRows)} | ${perStep((r) => r.rewriterRows)} | ` +
        `${fmt(end?.mean)} ± ${fmt(end?.sd)} | ${range(runs.map((r) => r.wallS))} | ` +
        `${range(runs.flatMap((r) => (r.maxRssMiB === null ? [] : [r.maxRssMiB])))} | ` +
        `${range(runs.map((r) => r.load1))} |`,
    );
  }
  lines.push("", noiseLine(sds, SHAPE.seeds));
  return lines.join("\n");
}

makeDirs(OUT);
const agent = compiledExampleAgent("multi-agent", ["agent.ts", "workflow.ts"], join(OUT, "build"));
const results: RunResult[] = [];
for (let seed = SHAPE.firstSeed; seed < SHAPE.firstSeed + SHAPE.seeds; seed++) {
  for (const arm of ARMS) {
    const result = run(arm, seed, agent);
    results.push(result);
    const rss = result.maxRssMiB === null ? "-" : result.maxRssMiB.toFixed(0);
    console.log(
      `${arm} seed ${seed}: reward ${result.reward.map(fmt).join(" ")}; val ${result.val.map(fmt).join(" ")}; ` +
        `${result.wallS.toFixed(0)} s, peak RSS ${rss} MiB, load at start ${result.load1.toFixed(2)}`,
    );
  }
}
const suffix = `${SHAPE.firstSeed === 0 ? "" : `-from-${SHAPE.firstSeed}`}${SHAPE.tag}`;
writeFileSync(join(OUT, `results${suffix}.json`), `${JSON.stringify(results, null, 2)}\n`);
const table = report(results);
writeFileSync(join(OUT, `table${suffix}.md`), `${table}\n`);
console.log(table);
