/**
 * @module Benchmark of the trainer's sample adapter: triplet events of a step's rollouts → scored engine rows, at
 * trajectory and transition level, against the baseline of merely JSON-parsing the same events (the least any
 * trainer must do after reading them from the gateway).
 */
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { assembleBatch, type BatchOptions, type RolloutRecord } from "../src/trainer/batch.js";
import type { TripletEventFields } from "../src/trainer/triplets.js";

const GROUPS = 64;
const GROUP_SIZE = 4;
const TURNS = 8;
const SYSTEM_TOKENS = 200;
const RESPONSE_TOKENS = 100;
const TOOL_TOKENS = 50;
const REPEATS = 7;

/** A deterministic token stream (no Math.random, so every run builds the same batch). */
function tokens(seed: number, length: number): number[] {
  return Array.from({ length }, (_, i) => (seed * 7919 + i * 104729) % 50_000);
}

/** One multi-turn rollout: each prompt extends the previous prompt ⧺ response with a tool result. */
function rolloutEvents(seed: number): TripletEventFields[] {
  const events: TripletEventFields[] = [];
  let prompt = tokens(seed, SYSTEM_TOKENS);
  for (let turn = 0; turn < TURNS; turn++) {
    const response = tokens(seed * 31 + turn, RESPONSE_TOKENS);
    events.push({
      event_type: "model_request",
      sequence: events.length + 1,
      data: {
        prompt_token_ids: prompt,
        response_token_ids: response,
        response_log_probs: response.map((id) => -(id % 97) / 10),
        server: { model: "bench", version: 0 },
      },
    });
    prompt = [...prompt, ...response, ...tokens(seed * 17 + turn, TOOL_TOKENS)];
  }
  events.push({ event_type: "reward", sequence: events.length + 1, data: { value: seed % 3 === 0 ? 1 : 0 } });
  return events;
}

function medianMs(run: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < REPEATS; i++) {
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(REPEATS / 2)]!;
}

const rollouts: RolloutRecord[] = [];
for (let g = 0; g < GROUPS; g++) {
  for (let k = 0; k < GROUP_SIZE; k++) {
    rollouts.push({ rolloutId: `r${g}-${k}`, dataId: `g${g}`, events: rolloutEvents(g * GROUP_SIZE + k) });
  }
}
const wire = rollouts.map((r) => JSON.stringify(r.events));
const options: BatchOptions = {
  level: "trajectory",
  limits: { maxPromptLength: 4096, maxResponseLength: 4096 },
  advantage: { estimator: "grpo", normByStd: true, rolloutLevel: true, reinforceBaseline: "batch_mean" },
  aggregation: "per-rollout-mean",
  rewardFillnaValue: 0,
  missingLogprobs: "recompute",
};

const sample = assembleBatch(rollouts, options);
const parseMs = medianMs(() => {
  for (const text of wire) JSON.parse(text);
});
const trajectoryMs = medianMs(() => assembleBatch(rollouts, options));
const transitionMs = medianMs(() => assembleBatch(rollouts, { ...options, level: "transition" }));
const wireMiB = wire.reduce((sum, text) => sum + text.length, 0) / 2 ** 20;

console.log(
  `setup: ${rollouts.length} rollouts (${GROUPS} groups × ${GROUP_SIZE}), ${TURNS} turns each, ` +
    `${RESPONSE_TOKENS}-token responses, ${TOOL_TOKENS}-token tool results; ${wireMiB.toFixed(1)} MiB of events; ` +
    `node ${process.version}, ${cpus().length} cores; median of ${REPEATS}`,
);
console.log(
  `trajectory: ${sample.counts.rows} rows, ${sample.counts.tokens} trained tokens, ${sample.counts.mismatches} mismatches`,
);
console.log(`baseline JSON.parse of the events: ${parseMs.toFixed(1)} ms`);
console.log(
  `assembleBatch trajectory: ${trajectoryMs.toFixed(1)} ms (${(trajectoryMs / parseMs).toFixed(2)}× baseline)`,
);
console.log(
  `assembleBatch transition: ${transitionMs.toFixed(1)} ms (${(transitionMs / parseMs).toFixed(2)}× baseline)`,
);
