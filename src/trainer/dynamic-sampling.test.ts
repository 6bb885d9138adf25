import { describe, expect, it } from "vitest";
import type { BatchOptions } from "./batch.js";
import { hasRewardSpread, keepGroupsWithSpread, samplingMetrics } from "./dynamic-sampling.js";
import type { FinishedGroup } from "./gateway-io.js";

const OPTIONS: BatchOptions = {
  level: "trajectory",
  limits: { maxPromptLength: 8, maxResponseLength: 8 },
  advantage: { estimator: "grpo", normByStd: true, rolloutLevel: true, reinforceBaseline: "batch_mean" },
  aggregation: "per-rollout-mean",
  rewardFillnaValue: 0,
  missingLogprobs: "recompute",
};

/** A finished group whose rollouts each made one call and got the given reward (null: none posted). */
function group(id: string, rewards: (number | null)[]): FinishedGroup {
  const records = rewards.map((reward, k) => ({
    rolloutId: `${id}-${k}`,
    dataId: id,
    events: [
      {
        event_type: "model_request",
        sequence: 1,
        data: {
          prompt_token_ids: [1],
          response_token_ids: [2, 3],
          response_log_probs: [-1, -1],
          server: { model: "m", version: 0 },
        },
      },
      ...(reward === null ? [] : [{ event_type: "reward", sequence: 2, data: { value: reward } }]),
    ],
  }));
  const plan = {
    groupId: id,
    dataIndex: 0,
    input: {},
    isTrain: true,
    batchIdx: 0,
    launchVersion: 0,
    rolloutIds: records.map((r) => r.rolloutId),
  };
  return { plan, records, failed: 0, failedDropped: 0, oldestVersion: 0, marks: [] };
}

describe("dynamic sampling (DAPO §3.2)", () => {
  it("keeps a group whose rewards differ and drops one whose rollouts all got one reward", () => {
    expect(hasRewardSpread(group("g", [1, 0, 1]), OPTIONS)).toBe(true);
    expect(hasRewardSpread(group("g", [1, 1, 1]), OPTIONS)).toBe(false);
    expect(hasRewardSpread(group("g", [0, 0, null]), OPTIONS)).toBe(false); // a missing reward is filled with 0
    expect(hasRewardSpread(group("g", [0.5]), OPTIONS)).toBe(false);
  });

  it("keeps at most the room left, in launch order, and counts the dropped groups", () => {
    const round = [group("a", [1, 1]), group("b", [0, 1]), group("c", [0, 0]), group("d", [1, 0])];
    const { kept, dropped } = keepGroupsWithSpread(round, OPTIONS, 1);
    expect(kept.map((g) => g.plan.groupId)).toEqual(["b"]);
    expect(dropped).toBe(2);
  });

  it("reports its cost as step metrics, null when off", () => {
    const cost = { rolloutsSampled: 48, rolloutsKept: 32, groupsDropped: 4, extraRounds: 1 };
    expect(samplingMetrics(cost)).toEqual({
      "sampling/rollouts_sampled": 48,
      "sampling/rollouts_kept": 32,
      "sampling/groups_dropped": 4,
      "sampling/extra_rounds": 1,
    });
    expect(samplingMetrics(null)["sampling/rollouts_sampled"]).toBeNull();
  });
});
