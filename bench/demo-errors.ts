/**
 * @module What the calculator policy gets wrong in a finished demo run, and what GRPO had to learn from. Reads
 * `runs/NAME/gateway.db` and sorts rollouts by {@link classifyOutcome} (correct, no tool call, tool call miscopies
 * the question, answer miscopies the tool result, no answer after the tool result):
 *
 * - its validation rollouts, before RL and at each validation step: what GRPO changed and what limits the result;
 * - its GRPO rollouts, step by step (`metadata.batch_idx`), with their groups (`metadata.group_id`): how many groups
 *   gave every rollout the same reward (a group-relative advantage of 0 for all, so no gradient), and how many
 *   miscopied rollouts were in a group where no rollout was correct (GRPO can push that wrong copy down, but has no
 *   right copy of that question to push up).
 *
 * Usage: `npx tsx bench/demo-errors.ts [runs/NAME]` (default `runs/demo`), after the demo has finished (the gateway
 * holds the file while it runs). Not part of `npm run bench`: it needs a demo run. See docs/benchmarks.md, Demo.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { classifyOutcome, OUTCOME_KINDS, type OutcomeKind } from "../examples/calculator/outcomes.js";
import type { Rollout } from "../src/protocol/index.js";
import { openStore } from "../src/store/open.js";
import type { Store } from "../src/store/store.js";

const PAGE = 500;
const MISCOPY: OutcomeKind = "tool call miscopies the question";

/** One rollout's outcome and reward (0 when it has no reward event). */
interface Scored {
  rollout: Rollout;
  kind: OutcomeKind;
  reward: number;
}

/** Every rollout of the store on one side (train or validation), in creation order. */
async function rolloutsOf(store: Store, isTrain: boolean): Promise<Rollout[]> {
  const all: Rollout[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await store.listRollouts({ isTrain, limit: PAGE, offset });
    all.push(...page);
    if (page.length < PAGE) return all;
  }
}

/** Classifies each rollout from its stored events. */
async function score(store: Store, rollouts: readonly Rollout[]): Promise<Scored[]> {
  const scored: Scored[] = [];
  for (const rollout of rollouts) {
    const question = String((rollout.input as { question?: unknown } | null)?.question ?? "");
    const events = await store.listEvents(rollout.rollout_id);
    const reward = events.find((e) => e.event_type === "reward")?.data as { value?: unknown } | undefined;
    scored.push({
      rollout,
      kind: classifyOutcome(question, events),
      reward: typeof reward?.value === "number" ? reward.value : 0,
    });
  }
  return scored;
}

/** Groups items by a key, keeping first-seen order. */
function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    groups.set(k, [...(groups.get(k) ?? []), item]);
  }
  return groups;
}

/** The outcome counts of some rollouts, in {@link OUTCOME_KINDS} order. */
function kindCounts(scored: readonly Scored[]): number[] {
  return OUTCOME_KINDS.map((kind) => scored.filter((s) => s.kind === kind).length);
}

/** Mean reward of some rollouts, 3 decimals. */
function meanReward(scored: readonly Scored[]): string {
  return (scored.reduce((sum, s) => sum + s.reward, 0) / scored.length).toFixed(3);
}

/** Prints the validation table: one row per phase (`NAME-before`, `NAME-vK`: the id without its `-dINDEX-COPY`). */
function printValidation(scored: readonly Scored[]): void {
  console.log("validation rollouts, by outcome (counts):\n");
  console.log(`| phase | rollouts | reward mean | ${OUTCOME_KINDS.join(" | ")} |`);
  console.log(`|---|---|---|${OUTCOME_KINDS.map(() => "---|").join("")}`);
  for (const [phase, rows] of groupBy(scored, (s) => s.rollout.rollout_id.replace(/-d\d+-\d+$/, ""))) {
    console.log(`| ${phase} | ${rows.length} | ${meanReward(rows)} | ${kindCounts(rows).join(" | ")} |`);
  }
}

/** Prints the GRPO table: one row per step, its groups' reward spread and its outcome counts. */
function printTraining(scored: readonly Scored[]): void {
  console.log("\nGRPO rollouts, by step (counts):\n");
  const head = [
    "step",
    "rollouts",
    "reward mean",
    "groups",
    "groups with one reward",
    "miscopies with no correct in group",
  ];
  console.log(`| ${[...head, ...OUTCOME_KINDS].join(" | ")} |`);
  console.log(`|${[...head, ...OUTCOME_KINDS].map(() => "---|").join("")}`);
  const stepOf = (s: Scored) => String((s.rollout.metadata as { batch_idx?: unknown }).batch_idx ?? "?");
  for (const [step, rows] of groupBy(scored, stepOf)) {
    const groups = [...groupBy(rows, (s) => String(s.rollout.metadata.group_id ?? s.rollout.rollout_id)).values()];
    const flat = groups.filter((g) => g.every((s) => s.reward === g[0]!.reward)).length;
    const stuck = groups
      .filter((g) => !g.some((s) => s.kind === "correct"))
      .reduce((n, g) => n + g.filter((s) => s.kind === MISCOPY).length, 0);
    const cells = [Number(step) + 1, rows.length, meanReward(rows), groups.length, flat, stuck, ...kindCounts(rows)];
    console.log(`| ${cells.join(" | ")} |`);
  }
}

const runDir = resolve(process.argv[2] ?? "runs/demo");
const dbPath = join(runDir, "gateway.db");
if (!existsSync(dbPath)) {
  console.error(`demo-errors: ${dbPath} does not exist (run \`npx arclight demo\` first, or name its runs/NAME)`);
  process.exit(2);
}
const store = await openStore(`sqlite:${dbPath}`);
try {
  console.log(`${runDir}\n`);
  printValidation(await score(store, await rolloutsOf(store, false)));
  const train = (await score(store, await rolloutsOf(store, true))).filter((s) => s.rollout.metadata.group_id);
  printTraining(train.filter((s) => !String(s.rollout.metadata.group_id).includes("-teacher-")));
} finally {
  await store.close();
}
