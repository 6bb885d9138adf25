import { describe, expect, it } from "vitest";
import { aggregatorFor } from "./aggregate.js";
import { aggregateTrajectories } from "./aggregate-trajectory.js";
import { aggregateTransitions } from "./aggregate-transition.js";
import type { ModelCall, RolloutTriplets } from "./triplets.js";

function call(turn: number, prompt: number[], response: number[], logprobs: number[] | null): ModelCall {
  return { turn, sequence: turn + 1, promptTokenIds: prompt, responseTokenIds: response, logprobs, policyVersion: 7 };
}

function rollout(calls: ModelCall[]): RolloutTriplets {
  return {
    rolloutId: "r1",
    dataId: "d1",
    calls,
    reward: 0,
    rewardFilled: false,
    errorCalls: 0,
    incompleteCalls: 0,
    malformedEvents: 0,
    missingLogprobCalls: 0,
    dedupedCalls: 0,
    callRewards: calls.map(() => 0),
    rewardEvents: 1,
    attachedRewards: 0,
    unmatchedRewards: 0,
    overriddenRewards: 0,
    spans: [],
  };
}

describe("aggregateTransitions", () => {
  it("makes one row per call, even when the next prompt extends the previous one", () => {
    const result = aggregateTransitions(
      rollout([call(0, [1, 2], [3, 4], [-1, -2]), call(1, [1, 2, 3, 4, 5], [6], null)]),
      { maxPromptLength: 10, maxResponseLength: 10 },
    );
    expect(result.mismatches).toEqual([]);
    expect(result.rows).toEqual([
      {
        rolloutId: "r1",
        dataId: "d1",
        promptTokenIds: [1, 2],
        responseTokenIds: [3, 4],
        lossMask: [1, 1],
        oldLogprobs: [-1, -2],
        policyVersions: [7],
        turns: [0],
      },
      {
        rolloutId: "r1",
        dataId: "d1",
        promptTokenIds: [1, 2, 3, 4, 5],
        responseTokenIds: [6],
        lossMask: [1],
        oldLogprobs: [null],
        policyVersions: [7],
        turns: [1],
      },
    ]);
  });

  it("drops long prompts, truncates long responses, skips empty responses, and counts each", () => {
    const result = aggregateTransitions(
      rollout([
        call(0, [1, 2, 3, 4], [5], [-1]),
        call(1, [1], [2, 3, 4], [-1, -2, -3]),
        call(2, [1], [], []),
        call(3, [1, 2, 3], [9, 9], [-4, -5]),
      ]),
      { maxPromptLength: 3, maxResponseLength: 2 },
    );
    expect(result.droppedRows).toBe(1);
    expect(result.truncatedRows).toBe(1);
    expect(result.emptyRows).toBe(1);
    expect(result.rows.map((r) => [r.turns[0], r.responseTokenIds, r.lossMask, r.oldLogprobs])).toEqual([
      [1, [2, 3], [1, 1], [-1, -2]],
      [3, [9, 9], [1, 1], [-4, -5]],
    ]);
  });
});

describe("aggregatorFor", () => {
  it("picks the function of each level", () => {
    expect(aggregatorFor("transition")).toBe(aggregateTransitions);
    expect(aggregatorFor("trajectory")).toBe(aggregateTrajectories);
  });
});
