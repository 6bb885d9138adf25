/**
 * Training under bad data: one test per failure that public bug reports of peer systems describe, each through real
 * components: a gateway on a SQLite file, the real engine server (behind a tamper server that rewrites its answers
 * the way a misbehaving upstream would), a local controller running node agents, the trainer loop and the embedded
 * engine.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { TrainRow } from "../src/engine/engine.js";
import type { Event } from "../src/protocol/event.js";
import { parseTrainerConfig, type TrainerConfigInput } from "../src/trainer/config.js";
import { runTraining, type TrainLoopOptions } from "../src/trainer/loop.js";
import { startTrainerStack, TEST_AGENT, type TrainerStack, type TrainerStackOptions } from "./support/stack.js";

type Json = Record<string, unknown>;

const stacks: TrainerStack[] = [];
afterEach(async () => {
  for (const stack of stacks.splice(0)) await stack.close();
});

async function stack(options: TrainerStackOptions = {}): Promise<TrainerStack> {
  const started = await startTrainerStack({ sqlite: true, ...options });
  stacks.push(started);
  return started;
}

function config(overrides: TrainerConfigInput = {}) {
  return parseTrainerConfig({
    name: "bad",
    n: 2,
    train_batch_size: 2,
    total_steps: 1,
    rollout_timeout_seconds: 60,
    controller: { command: ["node", TEST_AGENT], env_map: { AGL_INPUT: "input" } },
    aggregator: { level: "transition", max_prompt_length: 128, max_response_length: 96 },
    optimizer: { learning_rate: 1e-3 },
    checkpoint_interval: 0,
    val_interval: 0,
    pause_retry_after_seconds: 0,
    ...overrides,
  });
}

const items = (n: number, extra: object = {}) =>
  Array.from({ length: n }, (_, i) => ({ index: i, input: { prompt: `say a ${i}`, ...extra } }));

function options(s: TrainerStack, overrides: Partial<TrainLoopOptions> & Pick<TrainLoopOptions, "config">) {
  return {
    client: s.client,
    engine: s.engine,
    serving: s.serving,
    trainData: items(2),
    runDir: join(s.dir, "runs", "bad"),
    pollIntervalMs: 20,
    ...overrides,
  };
}

function readMetrics(s: TrainerStack): Record<string, number | null>[] {
  return readFileSync(join(s.dir, "runs", "bad", "metrics.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, number | null>);
}

/** The chat logprob entries of a non-stream answer's first choice. */
function logprobEntries(body: Json): { logprob: number | null }[] {
  const choice = (body.choices as Json[])[0]!;
  return (choice.logprobs as { content: { logprob: number | null }[] }).content;
}

/** Every stored `model_request` event data of the step's rollouts (raw format). */
async function modelRequests(s: TrainerStack, rolloutIds: string[]): Promise<Json[]> {
  const events: Event[] = [];
  for (const id of rolloutIds) events.push(...(await s.client.getEvents(id, { eventType: "model_request" })));
  return events.map((e) => e.data);
}

const ROLLOUTS = ["bad-e0-d0-0", "bad-e0-d0-1", "bad-e0-d1-0", "bad-e0-d1-1"];
const PROBE = [[10, 20, 30, 40, 50, 60, 70, 80]];

describe("training under bad data", () => {
  // Item 1: vLLM writes -9999 for a token its sampler gave zero probability; one PPO step returned loss null and every
  // weight became NaN, which would then be saved and served. Later, floored to -50, it still drove the loss metric to
  // ~1e8 through the clamped ratio: such a call is now flagged at capture and its row's logprobs recomputed.
  it("a recorded logprob of -9999 is flagged at capture, its row recomputed: finite steps, a sane loss", async () => {
    const s = await stack({
      tamper: (body) => {
        const entries = logprobEntries(body);
        entries[entries.length - 1]!.logprob = -9999;
        return body;
      },
    });
    const summary = await runTraining(options(s, { config: config({ total_steps: 2 }) }));
    expect(summary.steps).toBe(2);
    expect((await s.engine.logprobs(PROBE))[0]!.every(Number.isFinite)).toBe(true);
    const flagged = (await modelRequests(s, ROLLOUTS)).filter((d) => d.capture_incomplete === true);
    expect(flagged.length).toBeGreaterThan(0);
    for (const d of flagged) expect(d.capture_incomplete_reasons).toEqual(["logprobs_below_floor"]);
    for (const m of readMetrics(s)) {
      expect(Math.abs(m.loss ?? Number.NaN)).toBeLessThan(100);
      expect(Number.isFinite(m.grad_norm)).toBe(true);
      expect(m.nonfinite_steps).toBe(0);
      expect(m["logprobs/floored_tokens"]).toBe(0);
      expect(m["logprobs/recomputed_rows"]).toBeGreaterThan(0);
    }
  });

  // Item 2: without recorded logprobs PPO used the current policy's as old — kl 0 and clip_fraction 0 even with two
  // PPO epochs, uncounted.
  it("rows without recorded logprobs get recomputed old logprobs, counted, so a second PPO epoch sees real ratios", async () => {
    const s = await stack({ gateway: { include_log_probs: false } });
    const cfg = config({ max_ppo_update_times: 2, optimizer: { learning_rate: 1e-2 } });
    const trainData = items(2, { reward_by_index: true });
    const [m] = (await runTraining(options(s, { config: cfg, trainData }))).metrics;
    expect(m?.["logprobs/missing_calls"]).toBe(4);
    expect(m?.["logprobs/missing_rows"]).toBe(m?.rows);
    expect(m?.["logprobs/recomputed_rows"]).toBe(m?.rows);
    expect(m?.kl).toBeGreaterThan(0);
  });

  // Item 3: one `null` logprob entry nulled the call's logprobs in the triplet view and the batch died with
  // "oldLogprobs given for 2 of 4 rows (all or none)".
  it("a call with a null logprob entry is flagged at capture and its row recomputed; the batch trains", async () => {
    const s = await stack({
      tamper: (body, call) => {
        if (call === 0) logprobEntries(body)[0]!.logprob = null;
        return body;
      },
    });
    const summary = await runTraining(options(s, { config: config() }));
    expect(summary.steps).toBe(1);
    expect(summary.policyVersion).toBe(1);
    const flagged = (await modelRequests(s, ROLLOUTS)).filter((d) => d.capture_incomplete === true);
    expect(flagged.map((d) => d.capture_incomplete_reasons)).toEqual([["logprobs_nonfinite"]]);
    const [m] = summary.metrics;
    expect(m?.["logprobs/missing_rows"]).toBe(1);
    expect(m?.["logprobs/recomputed_rows"]).toBe(1);
    expect(m?.rows).toBe(4);
  });

  it("with missing_logprobs: drop, the row without logprobs is left out and counted", async () => {
    const s = await stack({
      tamper: (body, call) => {
        if (call === 0) logprobEntries(body)[0]!.logprob = null;
        return body;
      },
    });
    const [m] = (await runTraining(options(s, { config: config({ missing_logprobs: "drop" }) }))).metrics;
    expect(m?.["logprobs/dropped_rows"]).toBe(1);
    expect(m?.rows).toBe(3);
    expect(m?.["rollouts/trained"]).toBe(3);
  });

  // Item 4: a trainer that failed during the weight update left the gateway paused: every later agent call got 429.
  it("a trainer that fails during the update resumes the gateway it paused", async () => {
    const s = await stack();
    s.engine.trainStep = async () => {
      throw new Error("engine lost its device");
    };
    await expect(runTraining(options(s, { config: config() }))).rejects.toThrow("engine lost its device");
    expect((await s.client.proxyState()).paused).toBe(false);
  });

  // Item 5: a stream that lost ids (vLLM before PR #29074 skipped parser-suppressed chunks) was recorded complete
  // although usage.completion_tokens counted more ids, and the short row was trained.
  it("a response with fewer ids than its usage.completion_tokens is flagged incomplete and not trained", async () => {
    const s = await stack({
      tamper: (body, call) => {
        if (call !== 0) return body;
        const choice = (body.choices as Json[])[0]!;
        choice.token_ids = (choice.token_ids as number[]).slice(1);
        (choice.logprobs as { content: unknown[] }).content.splice(0, 1);
        return body;
      },
    });
    const [m] = (await runTraining(options(s, { config: config() }))).metrics;
    const flagged = (await modelRequests(s, ROLLOUTS)).filter((d) => d.capture_incomplete === true);
    expect(flagged.map((d) => d.capture_incomplete_reasons)).toEqual([["usage_mismatch"]]);
    expect(m?.incomplete_calls).toBe(1);
    expect(m?.no_calls).toBe(1);
    expect(m?.rows).toBe(3);
  });

  // Item 6: a rollout with a reward but no model call was left out of the advantages but its reward entered
  // reward/mean (0.5 reported where the trained rollouts' mean was 0.333), with no count anywhere.
  it("rollouts without model calls are counted and kept out of reward/mean; the overall mean is reported apart", async () => {
    const s = await stack();
    const trainData = [
      { index: 0, input: { prompt: "say a", reward: 0 } },
      { index: 1, input: { prompt: "say a", turns: 0, reward: 1 } },
    ];
    await runTraining(options(s, { config: config(), trainData }));
    const [m] = readMetrics(s);
    expect(m?.no_calls).toBe(2);
    expect(m?.["rollouts/trained"]).toBe(2);
    expect(m?.["reward/mean"]).toBe(0);
    expect(m?.["reward/all_rollouts_mean"]).toBe(0.5);
    for (const key of ["incomplete_calls", "malformed_events", "deduped_calls", "nonfinite_steps", "error_calls"])
      expect(m?.[key]).toBe(0);
  });

  // Item 6: the triplet view kept only the last call of identical prompt ids, dropping repeat samples, uncounted.
  it("two successful samples of the same prompt both train; nothing is de-duplicated", async () => {
    const s = await stack();
    const trainData = items(2, { turns: 2, same_prompt: true });
    const [m] = (await runTraining(options(s, { config: config(), trainData }))).metrics;
    expect(m?.rows).toBe(8);
    expect(m?.deduped_calls).toBe(0);
  });

  it("an update the engine skips as non-finite is counted, publishes nothing and names its rollouts", async () => {
    const s = await stack();
    const trainStep = s.engine.trainStep.bind(s.engine);
    // A NaN advantage cannot come from the gateway (rewards are checked finite), so poison the rows the loop sends.
    s.engine.trainStep = (rows, loss, optimizer) =>
      trainStep(
        rows.map((row): TrainRow => ({ ...row, advantages: row.advantages.map(() => Number.NaN) })),
        loss,
        optimizer,
      );
    const lines: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(line) });
    const summary = await runTraining(options(s, { config: config(), logger }));
    const [m] = summary.metrics;
    expect(m?.nonfinite_steps).toBe(1);
    const warning = lines.map((l) => JSON.parse(l)).find((l) => l.msg === "skipped a non-finite update");
    expect([...warning.rolloutIds].sort()).toEqual(ROLLOUTS);
    expect(m?.loss).toBeNull();
    expect(summary.policyVersion).toBe(0);
    expect(s.engine.policyVersion).toBe(0);
    expect((await s.engine.logprobs(PROBE))[0]!.every(Number.isFinite)).toBe(true);
  });
});
