import { describe, expect, it } from "vitest";
import { assembleBatch, batchOptionsFromConfig, type RolloutRecord } from "./batch.js";
import { parseTrainerConfig } from "./config.js";
import type { TripletEventFields } from "./triplets.js";

// Two rollouts of one input in the triplet shape the gateway serves: writer → checker → rewriter, each call with its
// response id, agent name, finish reason and text.
let sequence = 0;
function call(agent: string, id: string, text: string, finish = "stop"): TripletEventFields {
  sequence += 1;
  return {
    event_type: "model_request",
    sequence,
    timestamp: 1000 + sequence,
    event_id: null,
    data: {
      prompt_token_ids: [1, 2],
      response_token_ids: [3, 4],
      response_log_probs: [-0.5, -0.5],
      server: { model: "policy", version: 0 },
      agent_name: agent,
      response_id: id,
      finish_reason: finish,
      response_text: text,
    },
  };
}
function reward(value: number, callId?: string): TripletEventFields {
  sequence += 1;
  return { event_type: "reward", sequence, data: { value, ...(callId ? { call_id: callId } : {}) } };
}

const ROLLOUTS: RolloutRecord[] = [
  {
    rolloutId: "r1",
    dataId: "g",
    events: [
      call("writer", "w1", "ANSWER: 5"),
      call("checker", "c1", "ok"),
      call("rewriter", "rw1", "ANSWER: 6", "length"),
      reward(0.5, "w1"),
      reward(1),
    ],
  },
  {
    rolloutId: "r2",
    dataId: "g",
    events: [
      call("writer", "w2", "five"),
      call("checker", "c2", "wrong"),
      call("rewriter", "rw2", "ANSWER: 4"),
      reward(0.3, "c2"), // names the frozen checker's call: not trained, counted as unmatched
      reward(0),
    ],
  },
];

const BASE = {
  aggregator: { level: "transition" },
  advantage: { estimator: "grpo", norm_by_std: false },
  loss: { aggregation: "token-mean" },
  reward_policy: "per_call",
  intermediate_rewards: [
    { rule: "finish_length", weight: -0.2 },
    { rule: "format", regex: "^ANSWER: \\d+$", weight: -0.1 },
  ],
  agents: { train: ["writer", "rewriter"], frozen: ["checker"] },
} as const;

/** Element-wise toBeCloseTo (12 digits). */
function expectClose(actual: readonly number[], expected: readonly number[]): void {
  expect(actual).toHaveLength(expected.length);
  expected.forEach((value, i) => {
    expect(actual[i]).toBeCloseTo(value, 12);
  });
}

function advantages(credit: unknown) {
  const batch = assembleBatch(ROLLOUTS, batchOptionsFromConfig(parseTrainerConfig({ ...BASE, credit })));
  return { batch, byRow: batch.rows.map((row) => [row.rolloutId, row.turns[0], row.advantage]) };
}

describe("credit assignment on a writer → checker → rewriter group", () => {
  it("per_call: A_t = (R + r_t − b) / s with b the group mean of each rollout's mean return", () => {
    // r1: r = [0.5 (event), −0.2 (length)], R = 1 → G = [1.5, 0.8], mean 1.15.
    // r2: r = [−0.1 (format), 0], R = 0 → G = [−0.1, 0], mean −0.05. b = 0.55, s = 1.
    const { byRow } = advantages({ mode: "per_call" });
    expect(byRow.map(([id, turn]) => [id, turn])).toEqual([
      ["r1", 0],
      ["r1", 1],
      ["r2", 0],
      ["r2", 1],
    ]);
    const values = byRow.map(([, , a]) => a as number);
    expectClose(values, [0.95, 0.25, -0.65, -0.55]);
  });

  it("discounted (γ = 0.5): G_t = r_t + γ G_{t+1}, R at the last call", () => {
    // r1: G_1 = −0.2 + 1 = 0.8, G_0 = 0.5 + 0.4 = 0.9, mean 0.85. r2: G_1 = 0, G_0 = −0.1, mean −0.05. b = 0.4.
    const values = advantages({ mode: "discounted", gamma: 0.5 }).byRow.map(([, , a]) => a as number);
    expectClose(values, [0.5, 0.4, -0.5, -0.4]);
  });

  it("broadcast: the rollout's R + Σ r on every call, group-normalised as before", () => {
    // r1: 1 + 0.3 = 1.3; r2: 0 − 0.1 = −0.1; mean 0.6.
    const values = advantages({ mode: "broadcast" }).byRow.map(([, , a]) => a as number);
    expectClose(values, [0.7, 0.7, -0.7, -0.7]);
  });

  it("counts reward events, attachments, unmatched ids and each rule's hits", () => {
    const { counts } = advantages({ mode: "per_call" }).batch;
    expect(counts.rewardEvents).toBe(4);
    expect(counts.attachedRewards).toBe(1);
    expect(counts.unmatchedRewards).toBe(1);
    expect(counts.intermediateHits).toEqual({ finish_length: 1, format: 1 });
    expect(counts.callRewardSum).toBeCloseTo(0.2, 12);
  });

  it("puts each merged call's advantage on its own tokens at trajectory level", () => {
    // Two calls of one agent whose second prompt extends the first: one row, two advantages.
    const events: TripletEventFields[] = [
      {
        event_type: "model_request",
        sequence: 1,
        data: {
          prompt_token_ids: [1],
          response_token_ids: [5, 6],
          response_log_probs: [-1, -1],
          server: { version: 0 },
          response_id: "a",
        },
      },
      {
        event_type: "model_request",
        sequence: 2,
        data: {
          prompt_token_ids: [1, 5, 6, 9],
          response_token_ids: [7],
          response_log_probs: [-1],
          server: { version: 0 },
          response_id: "b",
        },
      },
      { event_type: "reward", sequence: 3, data: { value: -1, call_id: "a" } },
      { event_type: "reward", sequence: 4, data: { value: 1 } },
    ];
    const other: TripletEventFields[] = [
      {
        event_type: "model_request",
        sequence: 1,
        data: { prompt_token_ids: [2], response_token_ids: [8], response_log_probs: [-1], server: { version: 0 } },
      },
      { event_type: "reward", sequence: 2, data: { value: 0 } },
    ];
    const config = parseTrainerConfig({
      ...BASE,
      aggregator: { level: "trajectory" },
      agents: {},
      intermediate_rewards: [],
      credit: { mode: "per_call" },
    });
    const batch = assembleBatch(
      [
        { rolloutId: "m", dataId: "g", events },
        { rolloutId: "o", dataId: "g", events: other },
      ],
      batchOptionsFromConfig(config),
    );
    // m: G = [0, 1], mean 0.5; o: G = [0], mean 0; b = 0.25 → m: [−0.25, 0.75], o: −0.25.
    const merged = batch.rows[0]!;
    expect(merged.lossMask).toEqual([1, 1, 0, 1]);
    expect(merged.tokenAdvantages).toEqual([-0.25, -0.25, 0, 0.75]);
    expect(batch.engineRows[0]!.advantages).toEqual([0, -0.25, -0.25, 0, 0.75]);
    expect(batch.rows[1]!.advantage).toBe(-0.25);
  });
});
