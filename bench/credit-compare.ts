/**
 * @module `npm run bench -- credit-compare`: credit-assignment experiment. Trains fresh tiny embedded policies with
 * `arclight train` (its own gateway child, engine and controller per run) under several arms, interleaved per seed,
 * and prints each run's validation reward after the same budget, its train-reward and entropy curves, and the load
 * average. Arms: on the multi-agent example (writer → checker → rewriter, checker frozen) and the calculator example,
 * `broadcast` vs `per_call` / `discounted` with intermediate rewards; and rollout-level advantage + per-rollout loss
 * normalisation vs sample-level advantage + token-mean. Flags: `--seeds N` (default 1), `--steps N` (default 5),
 * `--only multi|calc|adv`. Results also go to `runs/credit-compare/results.json`.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(ROOT, "runs", "credit-compare");

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}
const SEEDS = Number(flag("seeds", "1"));
const STEPS = Number(flag("steps", "5"));
const ONLY = flag("only", "");

/** One arm: a name, the example, and the trainer keys it sets on top of the example's YAML. */
interface Arm {
  name: string;
  example: "multi-agent" | "calculator";
  keys: Record<string, unknown>;
}

const CALC_RULES = [
  { rule: "invalid_tool_call", weight: -0.2 },
  { rule: "finish_length", weight: -0.2 },
  { rule: "format", regex: "ANSWER: -?\\d", weight: -0.1, name: "no_answer_line" },
];
const MULTI_RULES = [{ rule: "format", regex: "^\\s*-?\\d+", weight: -0.1, name: "no_number" }];

const ARMS: Arm[] = [
  {
    name: "multi/broadcast",
    example: "multi-agent",
    keys: { credit: { mode: "broadcast" }, intermediate_rewards: [] },
  },
  {
    name: "multi/per_call+rules",
    example: "multi-agent",
    keys: { credit: { mode: "per_call" }, intermediate_rewards: MULTI_RULES },
  },
  { name: "calc/broadcast", example: "calculator", keys: { credit: { mode: "broadcast" } } },
  {
    name: "calc/per_call+rules",
    example: "calculator",
    keys: { credit: { mode: "per_call" }, intermediate_rewards: CALC_RULES },
  },
  {
    name: "calc/discounted+rules",
    example: "calculator",
    keys: { credit: { mode: "discounted", gamma: 0.9 }, intermediate_rewards: CALC_RULES },
  },
  {
    name: "adv/rollout+per-rollout-mean",
    example: "multi-agent",
    keys: { advantage: { rollout_level: true }, loss: { aggregation: "per-rollout-mean" } },
  },
  {
    name: "adv/sample+token-mean",
    example: "multi-agent",
    keys: { advantage: { rollout_level: false }, loss: { aggregation: "token-mean" } },
  },
];

/** Reads an example's YAML, sets the budget and the arm's keys, writes the run's YAML; data paths made absolute. */
function writeConfig(arm: Arm, seed: number, name: string): string {
  const dir = join(ROOT, "examples", arm.example);
  const base = parseYaml(readFileSync(join(dir, "train.yaml"), "utf8"));
  const valPath = join(OUT, `${arm.example}-val.jsonl`);
  const val = readFileSync(join(dir, "data", "val.jsonl"), "utf8")
    .trim()
    .split("\n")
    .slice(0, 16);
  writeFileSync(valPath, `${val.join("\n")}\n`);
  const config = {
    ...base,
    name,
    seed,
    data: { train_path: join(dir, "data", "train.jsonl"), val_path: valPath },
    train_batch_size: 4,
    n: 4,
    total_steps: STEPS,
    val_interval: STEPS,
    checkpoint_interval: 0,
    ...arm.keys,
  };
  const path = join(OUT, `${name}.yaml`);
  writeFileSync(path, stringify(config));
  return path;
}

function parseYaml(text: string): Record<string, unknown> {
  return parse(text) as Record<string, unknown>;
}

/** What one run gave. */
interface RunResult {
  arm: string;
  seed: number;
  valReward: number | null;
  /** Train reward mean per step. */
  reward: (number | null)[];
  entropy: (number | null)[];
  wallS: number;
  load1: number;
  ok: boolean;
}

/** Trains one arm with one seed through the CLI; reads its metrics.jsonl. */
function runArm(arm: Arm, seed: number): RunResult {
  const name = `cc-${arm.name.replace(/[^a-z0-9]+/gi, "-")}-s${seed}`;
  const config = writeConfig(arm, seed, name);
  rmSync(join(ROOT, "runs", name), { recursive: true, force: true });
  const started = performance.now();
  const load1 = loadavg()[0] ?? 0;
  const child = spawnSync(
    process.execPath,
    ["--import", "tsx", join(ROOT, "src/cli/main.ts"), "train", config, "--engine-seed", String(seed)],
    { cwd: ROOT, encoding: "utf8", timeout: 900_000 },
  );
  const wallS = (performance.now() - started) / 1000;
  let lines: Record<string, number | null>[] = [];
  try {
    lines = readFileSync(join(ROOT, "runs", name, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, number | null>);
  } catch {
    console.error(`${arm.name} seed ${seed}: no metrics (exit ${child.status}): ${child.stderr.slice(-500)}`);
  }
  return {
    arm: arm.name,
    seed,
    valReward: lines.at(-1)?.["val/reward_mean"] ?? null,
    reward: lines.map((m) => m["reward/mean"] ?? null),
    entropy: lines.map((m) => m.entropy ?? null),
    wallS,
    load1,
    ok: child.status === 0,
  };
}

const fmt = (v: number | null | undefined) => (v === null || v === undefined ? "-" : v.toFixed(3));

function main(): void {
  mkdirSync(OUT, { recursive: true });
  const arms = ARMS.filter((arm) => ONLY === "" || arm.name.startsWith(ONLY));
  console.log(`credit-compare: ${arms.length} arms x ${SEEDS} seeds, ${STEPS} steps of 4 groups x 4 rollouts each;`);
  console.log(
    `fresh tiny embedded policy per run, validation on 16 inputs after the last step; load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  const results: RunResult[] = [];
  // Interleaved: every arm once per seed before the next seed, so load drifts hit the arms alike.
  for (let seed = 0; seed < SEEDS; seed++) {
    for (const arm of arms) {
      const result = runArm(arm, seed);
      results.push(result);
      console.log(
        `${arm.name.padEnd(30)} seed ${seed}  val ${fmt(result.valReward)}  reward ${result.reward.map(fmt).join(" ")}` +
          `  entropy ${result.entropy.map(fmt).join(" ")}  ${result.wallS.toFixed(0)} s  load ${result.load1.toFixed(2)}`,
      );
      writeFileSync(join(OUT, "results.json"), `${JSON.stringify(results, null, 2)}\n`);
    }
  }
  console.log("arm                             mean val reward over seeds");
  for (const arm of arms) {
    const vals = results.filter((r) => r.arm === arm.name && r.valReward !== null).map((r) => r.valReward as number);
    const mean = vals.length === 0 ? null : vals.reduce((a, b) => a + b, 0) / vals.length;
    console.log(`${arm.name.padEnd(30)}  ${fmt(mean)}  (${vals.length} runs)`);
  }
  console.log(
    `load at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
}

main();
