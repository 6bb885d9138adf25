/**
 * @module What the calculator policy gets wrong in a finished demo run: its validation rollouts (before RL and at each
 * validation step) read from `runs/NAME/gateway.db` and sorted by {@link classifyOutcome} (correct, no tool call, tool
 * call miscopies the question, answer miscopies the tool result, no answer after the tool result). It shows what GRPO
 * changed and what limits the result after RL (docs/benchmarks.md, Demo).
 *
 * Usage: `npx tsx bench/demo-errors.ts [runs/NAME]` (default `runs/demo`), after the demo has finished (the gateway
 * holds the file while it runs). Not part of `npm run bench`: it needs a demo run.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { classifyOutcome, OUTCOME_KINDS, type OutcomeKind } from "../examples/calculator/outcomes.js";
import type { Rollout } from "../src/protocol/index.js";
import { openStore } from "../src/store/open.js";
import type { Store } from "../src/store/store.js";

const PAGE = 500;

/** One validation phase's rewards and outcome counts. */
interface Phase {
  rewards: number[];
  kinds: Map<OutcomeKind, number>;
}

/** Every validation rollout of the store, in creation order. */
async function validationRollouts(store: Store) {
  const all: Rollout[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await store.listRollouts({ isTrain: false, limit: PAGE, offset });
    all.push(...page);
    if (page.length < PAGE) return all;
  }
}

/** `NAME-before` or `NAME-vK`: a validation rollout's id without its `-dINDEX-COPY` tail. */
function phaseOf(rolloutId: string): string {
  return rolloutId.replace(/-d\d+-\d+$/, "");
}

const runDir = resolve(process.argv[2] ?? "runs/demo");
const dbPath = join(runDir, "gateway.db");
if (!existsSync(dbPath)) {
  console.error(`demo-errors: ${dbPath} does not exist (run \`npx arclight demo\` first, or name its runs/NAME)`);
  process.exit(2);
}
const store = await openStore(`sqlite:${dbPath}`);
try {
  const phases = new Map<string, Phase>();
  for (const rollout of await validationRollouts(store)) {
    const question = String((rollout.input as { question?: unknown } | null)?.question ?? "");
    const events = await store.listEvents(rollout.rollout_id);
    const phase: Phase = phases.get(phaseOf(rollout.rollout_id)) ?? { rewards: [], kinds: new Map() };
    phases.set(phaseOf(rollout.rollout_id), phase);
    const kind = classifyOutcome(question, events);
    phase.kinds.set(kind, (phase.kinds.get(kind) ?? 0) + 1);
    const reward = events.find((e) => e.event_type === "reward")?.data as { value?: unknown } | undefined;
    phase.rewards.push(typeof reward?.value === "number" ? reward.value : 0);
  }
  console.log(`validation rollouts of ${runDir}, by outcome (counts):\n`);
  console.log(`| phase | rollouts | reward mean | ${OUTCOME_KINDS.join(" | ")} |`);
  console.log(`|---|---|---|${OUTCOME_KINDS.map(() => "---|").join("")}`);
  for (const [phase, { rewards, kinds }] of phases) {
    const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
    const counts = OUTCOME_KINDS.map((kind) => kinds.get(kind) ?? 0);
    console.log(`| ${phase} | ${rewards.length} | ${mean.toFixed(3)} | ${counts.join(" | ")} |`);
  }
} finally {
  await store.close();
}
