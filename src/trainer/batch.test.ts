import { describe, expect, it } from "vitest";
import {
  assembleBatch,
  type BatchOptions,
  batchOptionsFromConfig,
  buildRolloutRows,
  type RolloutRecord,
  withTruncatedIsBatch,
} from "./batch.js";
import { parseTrainerConfig } from "./config.js";
import type { TripletEventFields } from "./triplets.js";

function events(...items: ({ prompt: number[]; response: number[]; extra?: object } | number)[]): TripletEventFields[] {
  return items.map((item, i) =>
    typeof item === "number"
      ? { event_type: "reward", sequence: i + 1, data: { value: item } }
      : {
          event_type: "model_request",
          sequence: i + 1,
          data: {
            prompt_token_ids: item.prompt,
            response_token_ids: item.response,
            response_log_probs: item.response.map(() => -1),
            server: { model: "m", version: 0 },
            ...item.extra,
          },
        },
  );
}

// Group g1: r1 makes 3 rows (two broken prefixes), r2 one row (its second row dropped), r5 only an error call.
// Group g2: r3 posts no reward (filled with 0), r4 gets 0 and a truncated response: a zero-variance group.
const ROLLOUTS: RolloutRecord[] = [
  {
    rolloutId: "r1",
    dataId: "g1",
    events: events(
      { prompt: [1, 2], response: [10, 11] },
      { prompt: [1, 2, 10, 11, 5], response: [12] },
      { prompt: [1, 3], response: [13] },
      { prompt: [1, 4], response: [14, 15] },
      1,
    ),
  },
  {
    rolloutId: "r2",
    dataId: "g1",
    events: events(
      { prompt: [1, 2], response: [20] },
      { prompt: [1, 2, 20], response: [99], extra: { capture_incomplete: true } },
      { prompt: [9, 9, 9, 9, 9, 9], response: [21] },
      0,
    ),
  },
  { rolloutId: "r3", dataId: "g2", events: events({ prompt: [1], response: [30, 31] }) },
  { rolloutId: "r4", dataId: "g2", events: events({ prompt: [1], response: [40, 41, 42, 43, 44, 45] }, 0) },
  {
    rolloutId: "r5",
    dataId: "g1",
    events: events({ prompt: [1], response: [], extra: { status: "error", http_status: 400 } }, 1),
  },
];

const OPTIONS: BatchOptions = {
  level: "trajectory",
  limits: { maxPromptLength: 5, maxResponseLength: 4 },
  advantage: { estimator: "grpo", normByStd: false, rolloutLevel: true, reinforceBaseline: "batch_mean" },
  aggregation: "per-rollout-mean",
  rewardFillnaValue: 0,
  missingLogprobs: "recompute",
};

describe("assembleBatch", () => {
  it("puts a rollout's advantage on every one of its rows, on each row's own loss-mask tokens", () => {
    const batch = assembleBatch(ROLLOUTS, OPTIONS);
    const r1 = batch.engineRows.filter((_, i) => batch.rows[i]!.rolloutId === "r1");
    expect(r1).toEqual([
      {
        tokenIds: [1, 2, 10, 11, 5, 12],
        lossMask: [0, 0, 1, 1, 0, 1],
        advantages: [0, 0, 0.5, 0.5, 0, 0.5],
        oldLogprobs: [0, 0, -1, -1, 0, -1],
        weight: 1 / 6,
      },
      { tokenIds: [1, 3, 13], lossMask: [0, 0, 1], advantages: [0, 0, 0.5], oldLogprobs: [0, 0, -1], weight: 1 / 6 },
      {
        tokenIds: [1, 4, 14, 15],
        lossMask: [0, 0, 1, 1],
        advantages: [0, 0, 0.5, 0.5],
        oldLogprobs: [0, 0, -1, -1],
        weight: 1 / 6,
      },
    ]);
    const r2 = batch.engineRows.filter((_, i) => batch.rows[i]!.rolloutId === "r2");
    expect(r2).toEqual([
      { tokenIds: [1, 2, 20], lossMask: [0, 0, 1], advantages: [0, 0, -0.5], oldLogprobs: [0, 0, -1], weight: 1 },
    ]);
  });

  it("gives a zero-variance group zero advantages and truncates its long response", () => {
    const batch = assembleBatch(ROLLOUTS, OPTIONS);
    const g2 = batch.rows.filter((row) => row.dataId === "g2");
    expect(g2.map((row) => [row.rolloutId, row.advantage, row.weight, row.responseTokenIds])).toEqual([
      ["r3", 0, 1 / 2, [30, 31]],
      ["r4", 0, 1 / 4, [40, 41, 42, 43]],
    ]);
  });

  it("counts what the step contained", () => {
    const batch = assembleBatch(ROLLOUTS, OPTIONS);
    expect(batch.counts).toEqual({
      rollouts: 5,
      groups: 2,
      rows: 6,
      tokens: 13,
      truncatedRows: 1,
      droppedRows: 1,
      emptyRows: 0,
      mismatches: 3,
      zeroAdvantageGroups: 1,
      rewardFilled: 1,
      excludedFromStats: 1,
      noCalls: 1,
      trainedRollouts: 4,
      errorCalls: 1,
      incompleteCalls: 1,
      malformedEvents: 0,
      dedupedCalls: 0,
      missingLogprobCalls: 0,
      missingLogprobRows: 0,
      missingLogprobRowsDropped: 0,
      flooredLogprobTokens: 0,
      oldestPolicyVersion: 0,
      rewardEvents: 4,
      attachedRewards: 0,
      unmatchedRewards: 0,
      overriddenRewards: 0,
      intermediateHits: {},
      intermediateUnattributed: 0,
      callRewardSum: 0,
      overlongPenalized: 0,
      overlongPenaltySum: 0,
    });
    expect(batch.mismatches).toEqual([
      { rolloutId: "r1", turn: 2, position: 1, kind: "token_differs" },
      { rolloutId: "r1", turn: 3, position: 1, kind: "token_differs" },
      { rolloutId: "r2", turn: 1, position: 0, kind: "token_differs" },
    ]);
    expect(batch.rewards.map((r) => r.reward)).toEqual([1, 0, 0, 0, 1]);
  });

  it("makes one row per call at transition level, and no weights under token-mean", () => {
    const batch = assembleBatch(ROLLOUTS, { ...OPTIONS, level: "transition", aggregation: "token-mean" });
    expect(batch.rows.filter((row) => row.rolloutId === "r1")).toHaveLength(4);
    expect(batch.counts.mismatches).toBe(0);
    expect(batch.counts.droppedRows).toBe(1);
    expect(batch.engineRows.every((row) => row.weight === undefined)).toBe(true);
    // Row [1, 2, 10, 11, 5] → [12] keeps its whole prompt as prompt: nothing but the response is trained.
    expect(batch.engineRows[1]!.lossMask).toEqual([0, 0, 0, 0, 0, 1]);
  });

  it("fills a missing reward with reward_fillna_value, which moves the group's baseline", () => {
    const batch = assembleBatch(ROLLOUTS, { ...OPTIONS, rewardFillnaValue: 1 });
    const advantages = Object.fromEntries(batch.rows.map((row) => [row.rolloutId, row.advantage]));
    // g2 becomes [r3: 1, r4: 0] → mean 0.5
    expect(advantages.r3).toBe(0.5);
    expect(advantages.r4).toBe(-0.5);
    expect(batch.counts.zeroAdvantageGroups).toBe(0);
  });
});

describe("assembleBatch with a crashed rollout", () => {
  it("fills the reward of a rollout with no events, leaves it out of the statistics and trains the rest", () => {
    const batch = assembleBatch(
      [
        { rolloutId: "ok1", dataId: "g", events: events({ prompt: [1], response: [2] }, 1) },
        { rolloutId: "ok2", dataId: "g", events: events({ prompt: [1], response: [3] }, 0) },
        { rolloutId: "crashed", dataId: "g", events: [] },
      ],
      OPTIONS,
    );
    expect(batch.counts.rewardFilled).toBe(1);
    expect(batch.counts.excludedFromStats).toBe(1);
    expect(batch.rows.map((row) => [row.rolloutId, row.advantage])).toEqual([
      ["ok1", 0.5],
      ["ok2", -0.5],
    ]);
  });

  it("returns an empty batch for no rollouts", () => {
    const batch = assembleBatch([], OPTIONS);
    expect(batch.engineRows).toEqual([]);
    expect(batch.counts.rows).toBe(0);
    expect(batch.counts.oldestPolicyVersion).toBeNull();
  });
});

describe("batch options", () => {
  it("reads every option from the trainer config", () => {
    const config = parseTrainerConfig({
      aggregator: { level: "transition", max_prompt_length: 7, max_response_length: 9 },
      advantage: { estimator: "rloo", norm_by_std: false, rollout_level: false },
      loss: { aggregation: "token-mean" },
      reward_fillna_value: -1,
      missing_logprobs: "drop",
      reward_policy: "per_call",
      credit: { mode: "discounted", gamma: 0.5 },
      intermediate_rewards: [{ rule: "finish_length", weight: -1 }],
    });
    expect(batchOptionsFromConfig(config)).toEqual({
      level: "transition",
      limits: { maxPromptLength: 7, maxResponseLength: 9 },
      advantage: { estimator: "rloo", normByStd: false, rolloutLevel: false, reinforceBaseline: "batch_mean" },
      aggregation: "token-mean",
      rewardFillnaValue: -1,
      missingLogprobs: "drop",
      rewardPolicy: "per_call",
      credit: { mode: "discounted", gamma: 0.5 },
      intermediateRewards: [{ rule: "finish_length", weight: -1 }],
    });
  });

  it("builds one rollout's rows for inspection", () => {
    const { triplets, aggregate } = buildRolloutRows(ROLLOUTS[0]!, OPTIONS);
    expect(triplets.calls).toHaveLength(4);
    expect(aggregate.rows.map((row) => row.lossMask)).toEqual([[1, 1, 0, 1], [1], [1, 1]]);
  });
});

describe("withTruncatedIsBatch", () => {
  it("replaces old logprobs by the recomputed ones and weighs tokens by the capped ratio", () => {
    const batch = assembleBatch([ROLLOUTS[1]!, ROLLOUTS[2]!], OPTIONS);
    // Rows: r2 [1, 2 | 20] and r3 [1 | 30, 31]; every recorded logprob is −1. Position 0 of engine.logprobs is 0.
    const tis = withTruncatedIsBatch(
      batch,
      [
        [0, -5, -1.5],
        [0, -0.5, -1],
      ],
      1.5,
    );
    // r2: exp(−1.5 − (−1)) = exp(−0.5); r3: exp(0.5) = 1.65 → capped at 1.5, exp(0) = 1
    expect(tis.engineRows[0]!.oldLogprobs).toEqual([0, 0, -1.5]);
    expect(tis.engineRows[0]!.isWeights![2]).toBeCloseTo(Math.exp(-0.5), 12);
    expect(tis.engineRows[1]!.oldLogprobs).toEqual([0, -0.5, -1]);
    expect(tis.engineRows[1]!.isWeights).toEqual([1, 1.5, 1]);
    expect(tis.tisCappedTokens).toBe(1);
    expect(tis.tisUnknownTokens).toBe(0);
    expect(tis.engineRows[1]!.advantages).toEqual(batch.engineRows[1]!.advantages);
  });

  it("rejects logprobs that do not line up with the rows", () => {
    const batch = assembleBatch([ROLLOUTS[2]!], OPTIONS);
    expect(() => withTruncatedIsBatch(batch, [], 2)).toThrow(RangeError);
    expect(() => withTruncatedIsBatch(batch, [[0, -1]], 2)).toThrow(/row 0 has 3 tokens, got 2 logprobs/);
  });
});

describe("assembleBatch with DAPO's overlong shaping and Dr. GRPO's advantage", () => {
  // Two rollouts of one group, both rewarded 1: 2 and 5 generated tokens.
  const group: RolloutRecord[] = [
    { rolloutId: "a", dataId: "g", events: events({ prompt: [1], response: [10, 11] }, 1) },
    { rolloutId: "b", dataId: "g", events: events({ prompt: [1], response: [20, 21, 22, 23, 24] }, 1) },
  ];
  const limits = { maxPromptLength: 8, maxResponseLength: 8 };

  it("adds the length penalty to the final reward before the group statistics, and counts it", () => {
    // L_max 4, L_cache 2: 2 tokens → 0, 5 tokens → −1; GRPO without std: A = ±0.5.
    const batch = assembleBatch(group, { ...OPTIONS, limits, overlong: { maxLength: 4, buffer: 2, factor: 1 } });
    expect(batch.rows.map((r) => r.advantage)).toEqual([0.5, -0.5]);
    expect(batch.rewards.map((r) => r.reward)).toEqual([1, 1]);
    expect(batch.counts.overlongPenalized).toBe(1);
    expect(batch.counts.overlongPenaltySum).toBe(-1);
    expect(assembleBatch(group, { ...OPTIONS, limits }).rows.map((r) => r.advantage)).toEqual([0, 0]);
  });

  it("reads dr_grpo as GRPO without the std division, and overlong_shaping from the config", () => {
    const config = parseTrainerConfig({
      advantage: { estimator: "dr_grpo", norm_by_std: true },
      overlong_shaping: { max_length: 4, buffer: 2 },
    });
    const options = batchOptionsFromConfig(config);
    expect(options.advantage).toMatchObject({ estimator: "grpo", normByStd: false });
    expect(options.overlong).toEqual({ maxLength: 4, buffer: 2, factor: 1 });
    expect(batchOptionsFromConfig(parseTrainerConfig({})).overlong).toBeUndefined();
  });
});
