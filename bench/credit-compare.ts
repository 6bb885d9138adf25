/**
 * @module `npm run bench -- credit-compare`: credit-assignment experiment. Trains policies with `arclight train` (its
 * own gateway child, engine, frozen engine where the example has one, and controller per run) under several arms,
 * interleaved per seed, and prints each run's validation-reward and entropy curves over the same steps, the frozen
 * agent's weight hashes, and the load average. Every arm of an example starts from the same weights: a warm start
 * given with `--calc-init DIR` / `--multi-init DIR` (the SFT checkpoints of `arclight demo` and
 * `bench/credit-warm-start.ts`), else a fresh tiny policy. Arms: on the calculator example (symbols-form problems,
 * transition rows), `broadcast` vs `per_call` / `discounted` with intermediate rewards, and rollout-level advantage +
 * per-rollout loss normalisation (the broadcast arm, the defaults) vs sample-level advantage + token-mean; on the
 * multi-agent example (writer → checker → rewriter, checker frozen), `broadcast` vs `per_call` with rules.
 * Flags: `--seeds N` (3), `--first-seed N` (0), `--steps N` (8), `--groups N` inputs per step (4), `--n N` rollouts
 * per input (4), `--val N` validation inputs (32), `--val-interval N` (4), `--val-temperature T` (0, greedy),
 * `--calc-lr` (0.001), `--multi-lr` (0.0003), `--only PREFIX`. Results also go to
 * `runs/credit-compare/results.json` (`results-PREFIX[-from-N].json` with `--only`, `--first-seed`).
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";
import { makeDirs } from "../src/fs/make-dirs.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(ROOT, "runs", "credit-compare");

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}
const SEEDS = Number(flag("seeds", "3"));
/** The first seed (more seeds for an earlier batch: `--first-seed 3 --seeds 3` runs seeds 3, 4, 5). */
const FIRST_SEED = Number(flag("first-seed", "0"));
const STEPS = Number(flag("steps", "8"));
const GROUPS = Number(flag("groups", "4"));
const GROUP_SIZE = Number(flag("n", "4"));
const VAL = Number(flag("val", "32"));
const VAL_INTERVAL = Number(flag("val-interval", "4"));
const VAL_TEMPERATURE = flag("val-temperature", "0");
const ONLY = flag("only", "");
/** The examples. */
type Example = "multi-agent" | "calculator";
const INIT: Record<Example, string> = { calculator: flag("calc-init", ""), "multi-agent": flag("multi-init", "") };
/** GRPO learning rate per example: the demo's 1e-3 on the calculator; 3e-4 on the multi-agent example, whose greedy
 * validation reward fell from 0.550 to 0.350 in 2 steps at 1e-3 from its warm start (one timing run). */
const LR: Record<Example, number> = {
  calculator: Number(flag("calc-lr", "0.001")),
  "multi-agent": Number(flag("multi-lr", "0.0003")),
};

/** One arm: a name, the example, and the trainer keys it sets on top of the example's YAML. */
interface Arm {
  name: string;
  example: Example;
  keys: Record<string, unknown>;
}

const CALC_RULES = [
  { rule: "invalid_tool_call", weight: -0.2 },
  { rule: "finish_length", weight: -0.2 },
  { rule: "format", regex: "ANSWER: -?\\d", weight: -0.1, name: "no_answer_line" },
];
const MULTI_RULES = [{ rule: "format", regex: "^\\s*-?\\d+", weight: -0.1, name: "no_number" }];
/** Rollout-level group advantage + per-rollout loss normalisation: the trainer's defaults, written out. */
const ROLLOUT_LEVEL = { advantage: { rollout_level: true }, loss: { aggregation: "per-rollout-mean" } };

const ARMS: Arm[] = [
  // calc/broadcast is also the rollout-level + per-rollout-mean arm of the advantage comparison.
  { name: "calc/broadcast", example: "calculator", keys: { credit: { mode: "broadcast" }, ...ROLLOUT_LEVEL } },
  {
    name: "calc/per_call+rules",
    example: "calculator",
    keys: { credit: { mode: "per_call" }, intermediate_rewards: CALC_RULES, ...ROLLOUT_LEVEL },
  },
  {
    name: "calc/discounted+rules",
    example: "calculator",
    keys: { credit: { mode: "discounted", gamma: 0.9 }, intermediate_rewards: CALC_RULES, ...ROLLOUT_LEVEL },
  },
  {
    name: "calc/sample+token-mean",
    example: "calculator",
    keys: {
      credit: { mode: "broadcast" },
      advantage: { rollout_level: false },
      loss: { aggregation: "token-mean" },
    },
  },
  {
    // Today's behaviour: the last reward event is the final reward (the writer's call reward is set aside).
    name: "multi/broadcast",
    example: "multi-agent",
    keys: { reward_policy: "last", credit: { mode: "broadcast" }, intermediate_rewards: [] },
  },
  {
    name: "multi/per_call+rules",
    example: "multi-agent",
    keys: { reward_policy: "per_call", credit: { mode: "per_call" }, intermediate_rewards: MULTI_RULES },
  },
];

function parseYaml(text: string): Record<string, unknown> {
  return parse(text) as Record<string, unknown>;
}

/** Non-empty JSON lines of a file. */
function jsonLines(path: string): string[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "");
}

/**
 * The example's train and val files for this experiment: the calculator's symbols-form problems (what the demo's
 * warm start learned), the first `--val` val inputs.
 */
function writeData(example: Example): { train: string; val: string } {
  const dir = join(ROOT, "examples", example, "data");
  const keep = (line: string) => example !== "calculator" || (JSON.parse(line) as { form?: string }).form === "symbols";
  const train = join(OUT, `${example}-train.jsonl`);
  const val = join(OUT, `${example}-val.jsonl`);
  writeFileSync(train, `${jsonLines(join(dir, "train.jsonl")).filter(keep).join("\n")}\n`);
  writeFileSync(val, `${jsonLines(join(dir, "val.jsonl")).filter(keep).slice(0, VAL).join("\n")}\n`);
  return { train, val };
}

/**
 * The agent as plain JavaScript (tsx compiles the agent again in every rollout process, about 0.4 s of CPU each):
 * the calculator's from `npm run build`, the multi-agent one compiled here with tsc into runs/credit-compare/build
 * (again when its sources are newer).
 */
function agentCommand(example: Example): string[] {
  if (example === "calculator") {
    const compiled = join(ROOT, "dist", "examples", "calculator", "agent.js");
    if (!existsSync(compiled)) throw new Error(`${compiled} is missing: run npm run build first`);
    return ["node", compiled];
  }
  const outDir = join(OUT, "build");
  const compiled = join(outDir, "examples", "multi-agent", "agent.js");
  const sources = ["agent.ts", "workflow.ts"].map((file) => join(ROOT, "examples", "multi-agent", file));
  const fresh = existsSync(compiled) && sources.every((src) => statSync(src).mtimeMs < statSync(compiled).mtimeMs);
  if (fresh) return ["node", compiled];
  const tsc = spawnSync(
    process.execPath,
    [
      join(ROOT, "node_modules", "typescript", "bin", "tsc"),
      ...["--outDir", outDir, "--rootDir", ROOT, "--module", "nodenext", "--moduleResolution", "nodenext"],
      ...["--target", "es2022", "--skipLibCheck", "--strict", join(ROOT, "examples", "multi-agent", "agent.ts")],
    ],
    { cwd: ROOT, encoding: "utf8" },
  );
  if (tsc.status !== 0) throw new Error(`tsc examples/multi-agent/agent.ts failed: ${tsc.stdout}${tsc.stderr}`);
  return ["node", compiled];
}

/** Per example: data files and the agent command, made once. */
type Setup = Record<Example, { train: string; val: string; command: string[] }>;

/** Reads an example's YAML, sets the budget, data, agent and the arm's keys, writes the run's YAML. */
function writeConfig(arm: Arm, seed: number, name: string, setup: Setup): string {
  const base = parseYaml(readFileSync(join(ROOT, "examples", arm.example, "train.yaml"), "utf8"));
  const { train, val, command } = setup[arm.example];
  const config = {
    ...base,
    name,
    seed,
    data: { train_path: train, val_path: val },
    controller: { ...(base.controller as Record<string, unknown>), command, pool_size: 8 },
    // Transition rows (one per call, LightningRL's unit); a calculator call's prompt after a tool result is up to
    // 159 tokens and a response up to 69 (the teacher's recorded calls), within the 256-token context.
    aggregator:
      arm.example === "calculator"
        ? { level: "transition", max_prompt_length: 176, max_response_length: 80 }
        : base.aggregator,
    // The demo's GRPO optimiser settings (weight decay 0), at the example's learning rate.
    optimizer: { learning_rate: LR[arm.example], weight_decay: 0 },
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

/** The CLI, compiled (`npm run build`). */
const CLI = join(ROOT, "bin", "arclight.js");

/** What one run gave. */
interface RunResult {
  arm: string;
  seed: number;
  /** Validation reward mean at each validated step. */
  val: { step: number; reward: number }[];
  /** Train reward mean per step. */
  reward: (number | null)[];
  entropy: (number | null)[];
  /** The frozen engine's weight hashes at start and end (`runs/NAME/frozen.json`); null without frozen agents. */
  frozen: { start: string; end: string } | null;
  wallS: number;
  load1: number;
  ok: boolean;
}

function readFrozen(runDir: string): RunResult["frozen"] {
  const path = join(runDir, "frozen.json");
  if (!existsSync(path)) return null;
  const file = JSON.parse(readFileSync(path, "utf8")) as { start_sha256: string; end_sha256: string };
  return { start: file.start_sha256, end: file.end_sha256 };
}

/** Trains one arm with one seed through the CLI; reads its metrics.jsonl and frozen.json. */
function runArm(arm: Arm, seed: number, setup: Setup): RunResult {
  const name = `cc-${arm.name.replace(/[^a-z0-9]+/gi, "-")}-s${seed}`;
  const config = writeConfig(arm, seed, name, setup);
  const runDir = join(ROOT, "runs", name);
  rmSync(runDir, { recursive: true, force: true });
  const init = INIT[arm.example] === "" ? [] : ["--init-from", resolve(INIT[arm.example])];
  const started = performance.now();
  const load1 = loadavg()[0] ?? 0;
  const args = [CLI, "train", config, "--engine-seed", String(seed), "--val-temperature", VAL_TEMPERATURE, ...init];
  const child = spawnSync(process.execPath, args, { cwd: ROOT, encoding: "utf8", timeout: 1_800_000 });
  const wallS = (performance.now() - started) / 1000;
  let lines: Record<string, number | null>[] = [];
  try {
    lines = jsonLines(join(runDir, "metrics.jsonl")).map((line) => JSON.parse(line) as Record<string, number | null>);
  } catch {
    console.error(`${arm.name} seed ${seed}: no metrics (exit ${child.status}): ${child.stderr.slice(-500)}`);
  }
  const val = lines.flatMap((m) =>
    typeof m["val/reward_mean"] === "number" ? [{ step: m.step as number, reward: m["val/reward_mean"] }] : [],
  );
  return {
    arm: arm.name,
    seed,
    val,
    reward: lines.map((m) => m["reward/mean"] ?? null),
    entropy: lines.map((m) => m.entropy ?? null),
    frozen: readFrozen(runDir),
    wallS,
    load1,
    ok: child.status === 0,
  };
}

/** Greedy validation reward of an example's starting policy (step 0 of every arm), through `arclight eval`. */
function startReward(example: Example, setup: Setup): number | null {
  if (INIT[example] === "") return null;
  const arm = ARMS.find((a) => a.example === example) as Arm;
  const config = writeConfig(arm, 0, `cc-${example}-start`, setup);
  const child = spawnSync(
    process.execPath,
    [CLI, "eval", resolve(INIT[example]), "--data", setup[example].val, "--config", config],
    { cwd: ROOT, encoding: "utf8", timeout: 900_000 },
  );
  const match = /reward (-?\d+\.\d+)/.exec(child.stdout);
  if (match === null) console.error(`eval of ${INIT[example]} failed: ${child.stdout}${child.stderr}`);
  return match === null ? null : Number(match[1]);
}

/** Where the results go: one file per `--only` selection, so two selections can run at once. */
const RESULTS = join(
  OUT,
  `results${ONLY === "" ? "" : `-${ONLY.replace(/[^a-z0-9]+/gi, "-")}`}${FIRST_SEED === 0 ? "" : `-from-${FIRST_SEED}`}.json`,
);

const fmt = (v: number | null | undefined) => (v === null || v === undefined ? "-" : v.toFixed(3));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** Mean, min and max of a list (null when empty). */
function spread(values: number[]): { mean: number; min: number; max: number } | null {
  if (values.length === 0) return null;
  return {
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    min: Math.min(...values),
    max: Math.max(...values),
  };
}

/** Per arm: the validation reward at each validated step and the entropy of the last step, over the seeds. */
function printSummary(arms: Arm[], results: RunResult[]): void {
  console.log("arm                        val reward per validated step: mean [min, max] over seeds; last entropy");
  for (const arm of arms) {
    const runs = results.filter((r) => r.arm === arm.name);
    const steps = [...new Set(runs.flatMap((r) => r.val.map((v) => v.step)))].sort((a, b) => a - b);
    const cells = steps.map((step) => {
      const s = spread(runs.flatMap((r) => r.val.filter((v) => v.step === step).map((v) => v.reward)));
      return `step ${step} ${fmt(s?.mean)} [${fmt(s?.min)}, ${fmt(s?.max)}]`;
    });
    const entropy = spread(
      runs.flatMap((r) => (typeof r.entropy.at(-1) === "number" ? [r.entropy.at(-1) as number] : [])),
    );
    console.log(`${arm.name.padEnd(26)} ${cells.join("  ")}  entropy ${fmt(entropy?.mean)}  (${runs.length} runs)`);
  }
  const frozen = results.filter((r) => r.frozen !== null);
  const same = frozen.filter((r) => r.frozen?.start === r.frozen?.end).length;
  if (frozen.length > 0)
    console.log(`frozen checker weights bit-identical after training (sha256): ${same} of ${frozen.length} runs`);
}

function main(): void {
  makeDirs(OUT);
  const arms = ARMS.filter((arm) => ONLY === "" || arm.name.startsWith(ONLY));
  const examples = [...new Set(arms.map((arm) => arm.example))];
  const setup = {} as Setup;
  for (const example of examples) setup[example] = { ...writeData(example), command: agentCommand(example) };
  console.log(
    `credit-compare: ${arms.length} arms x ${SEEDS} seeds, ${STEPS} steps of ${GROUPS} inputs x ${GROUP_SIZE} rollouts; ` +
      `validation on ${VAL} inputs every ${VAL_INTERVAL} steps at temperature ${VAL_TEMPERATURE}; ` +
      `learning rate ${arms
        .map((arm) => `${arm.example} ${LR[arm.example]}`)
        .filter((v, i, all) => all.indexOf(v) === i)
        .join(", ")}; load ${load()}`,
  );
  for (const example of examples) {
    const from = INIT[example] === "" ? "a fresh tiny policy" : INIT[example];
    console.log(`${example}: every arm starts from ${from}; step 0 val reward ${fmt(startReward(example, setup))}`);
  }
  const results: RunResult[] = [];
  // Interleaved: every arm once per seed before the next seed, so load drifts hit the arms alike.
  for (let seed = FIRST_SEED; seed < FIRST_SEED + SEEDS; seed++) {
    for (const arm of arms) {
      const result = runArm(arm, seed, setup);
      results.push(result);
      const val = result.val.map((v) => `${v.step}:${fmt(v.reward)}`).join(" ");
      const frozen =
        result.frozen === null ? "" : `  frozen ${result.frozen.start === result.frozen.end ? "identical" : "CHANGED"}`;
      console.log(
        `${arm.name.padEnd(26)} seed ${seed}  val ${val}  reward ${result.reward.map(fmt).join(" ")}` +
          `  entropy ${result.entropy.map(fmt).join(" ")}${frozen}  ${result.wallS.toFixed(0)} s  load ${result.load1.toFixed(2)}`,
      );
      writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
    }
  }
  printSummary(arms, results);
  console.log(`load at the end: ${load()}`);
}

main();
