import { describe, expect, it } from "vitest";
import { aggregateTrajectories, findPrefixBreak } from "./aggregate-trajectory.js";
import type { ModelCall, RolloutTriplets } from "./triplets.js";

// Token ids of a tiny chat template: S system, U user, A assistant header, E <|im_end|>, N newline, T tool result.
const S = 1;
const U = 2;
const A = 3;
const E = 4;
const N = 5;
const T = 6;
const U2 = 7;

const WIDE = { maxPromptLength: 100, maxResponseLength: 100 };

function call(turn: number, prompt: number[], response: number[], logprobs?: number[] | null, version = 0): ModelCall {
  return {
    turn,
    sequence: turn + 1,
    promptTokenIds: prompt,
    responseTokenIds: response,
    logprobs: logprobs === undefined ? response.map((_, i) => -(i + 1)) : logprobs,
    policyVersion: version,
  };
}

function rollout(calls: ModelCall[]): RolloutTriplets {
  return {
    rolloutId: "r1",
    dataId: "d1",
    calls,
    reward: 1,
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

describe("aggregateTrajectories", () => {
  it("merges a clean multi-turn conversation into one row, responses trained and nothing else", () => {
    const result = aggregateTrajectories(
      rollout([call(0, [S, U, A], [10, 11, E]), call(1, [S, U, A, 10, 11, E], [12, E])]),
      WIDE,
    );
    expect(result.rows).toHaveLength(1);
    expect(result.mismatches).toEqual([]);
    const row = result.rows[0]!;
    expect(row.promptTokenIds).toEqual([S, U, A]);
    expect(row.responseTokenIds).toEqual([10, 11, E, 12, E]);
    expect(row.lossMask).toEqual([1, 1, 1, 1, 1]);
    expect(row.oldLogprobs).toEqual([-1, -2, -3, -1, -2]);
    expect(row.turns).toEqual([0, 1]);
  });

  it("merges when the next prompt puts a newline after <|im_end|>, the newline masked as context", () => {
    const result = aggregateTrajectories(
      rollout([call(0, [S, U, A], [10, E]), call(1, [S, U, A, 10, E, N, U2, A], [11, E])]),
      WIDE,
    );
    expect(result.rows).toHaveLength(1);
    expect(result.mismatches).toEqual([]);
    const row = result.rows[0]!;
    expect(row.responseTokenIds).toEqual([10, E, N, U2, A, 11, E]);
    expect(row.lossMask).toEqual([1, 1, 0, 0, 0, 1, 1]);
    expect(row.oldLogprobs).toEqual([-1, -2, null, null, null, -1, -2]);
  });

  it("masks tool results between turns and keeps each call's logprobs on its own tokens", () => {
    const result = aggregateTrajectories(
      rollout([
        call(0, [S, U, A], [20, E], [-1, -2]),
        call(1, [S, U, A, 20, E, N, T, T, T, E, N, A], [21, E], [-3, -4]),
        call(2, [S, U, A, 20, E, N, T, T, T, E, N, A, 21, E, N, T, A], [22], [-5]),
      ]),
      WIDE,
    );
    expect(result.rows).toHaveLength(1);
    const row = result.rows[0]!;
    expect(row.responseTokenIds).toEqual([20, E, N, T, T, T, E, N, A, 21, E, N, T, A, 22]);
    expect(row.lossMask).toEqual([1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1]);
    expect(row.oldLogprobs).toEqual([-1, -2, null, null, null, null, null, null, null, -3, -4, null, null, null, -5]);
    expect(row.turns).toEqual([0, 1, 2]);
  });

  it("starts a new row at a broken prefix and records the turn and first differing position", () => {
    const result = aggregateTrajectories(
      rollout([call(0, [S, U, A], [10, E]), call(1, [S, U, A, 10, 99, N, A], [11, E]), call(2, [S, U2, A], [12])]),
      WIDE,
    );
    expect(result.rows.map((r) => r.promptTokenIds)).toEqual([
      [S, U, A],
      [S, U, A, 10, 99, N, A],
      [S, U2, A],
    ]);
    expect(result.rows.map((r) => r.lossMask)).toEqual([[1, 1], [1, 1], [1]]);
    expect(result.mismatches).toEqual([
      { rolloutId: "r1", turn: 1, position: 4, kind: "token_differs" },
      { rolloutId: "r1", turn: 2, position: 1, kind: "token_differs" },
    ]);
  });

  it("records a prompt that stops inside the row (truncated history) as prompt_shorter", () => {
    const result = aggregateTrajectories(
      rollout([call(0, [S, U, A], [10, 11, E]), call(1, [S, U, A, 10], [12])]),
      WIDE,
    );
    expect(result.rows).toHaveLength(2);
    expect(result.mismatches).toEqual([{ rolloutId: "r1", turn: 1, position: 4, kind: "prompt_shorter" }]);
  });

  it("treats an empty response as nothing to train on: alone it is skipped, between turns it merges", () => {
    const alone = aggregateTrajectories(rollout([call(0, [S, U, A], [])]), WIDE);
    expect(alone.rows).toEqual([]);
    expect(alone.emptyRows).toBe(1);

    const between = aggregateTrajectories(
      rollout([call(0, [S, U, A], []), call(1, [S, U, A, N, A], [10, E]), call(2, [S, U, A, N, A, 10, E, N], [])]),
      WIDE,
    );
    expect(between.rows).toHaveLength(1);
    expect(between.rows[0]!.responseTokenIds).toEqual([N, A, 10, E, N]);
    expect(between.rows[0]!.lossMask).toEqual([0, 0, 1, 1, 0]);
    expect(between.emptyRows).toBe(0);
  });

  it("puts null logprobs on a call's tokens when none were recorded", () => {
    const result = aggregateTrajectories(
      rollout([call(0, [S], [10, E], null), call(1, [S, 10, E, N], [11], [-2])]),
      WIDE,
    );
    expect(result.rows[0]!.oldLogprobs).toEqual([null, null, null, -2]);
  });

  it("lists the distinct policy versions that produced a merged row", () => {
    const result = aggregateTrajectories(
      rollout([
        call(0, [S], [10], undefined, 3),
        call(1, [S, 10], [11], undefined, 2),
        call(2, [S, 10, 11], [12], undefined, 3),
      ]),
      WIDE,
    );
    expect(result.rows[0]!.policyVersions).toEqual([2, 3]);
  });

  it("drops a row whose first prompt is too long, truncates a long response region, and counts both", () => {
    const result = aggregateTrajectories(
      rollout([
        call(0, [S, U, A, T, T, T], [10]),
        call(1, [S, U2, A], [11, E]),
        call(2, [S, U2, A, 11, E, N, T, T, A], [12, E]),
      ]),
      { maxPromptLength: 5, maxResponseLength: 4 },
    );
    expect(result.droppedRows).toBe(1);
    expect(result.truncatedRows).toBe(1);
    expect(result.rows).toHaveLength(1);
    expect(result.rows[0]!.promptTokenIds).toEqual([S, U2, A]);
    expect(result.rows[0]!.responseTokenIds).toEqual([11, E, N, T]);
    expect(result.rows[0]!.lossMask).toEqual([1, 1, 0, 0]);
    expect(result.rows[0]!.oldLogprobs).toEqual([-1, -2, null, null]);
  });

  it("skips a row whose truncation leaves only context", () => {
    const result = aggregateTrajectories(rollout([call(0, [S], []), call(1, [S, N, N, N], [10])]), {
      maxPromptLength: 5,
      maxResponseLength: 2,
    });
    expect(result.truncatedRows).toBe(1);
    expect(result.emptyRows).toBe(1);
    expect(result.rows).toEqual([]);
  });
});

describe("aggregateTrajectories with named agents", () => {
  it("never merges calls of two named agents, even when the prompt extends the row; the same agent's calls merge", () => {
    const writer = (turn: number, prompt: number[], response: number[]) => ({
      ...call(turn, prompt, response),
      agentName: "writer",
    });
    const checker = { ...call(1, [S, U, A, 10, E, N, A], [11, E]), agentName: "checker" };
    const out = aggregateTrajectories(
      rollout([writer(0, [S, U, A], [10, E]), checker, writer(2, [S, U, A, 10, E, N, A, 11, E, N, A], [12, E])]),
      WIDE,
    );
    expect(out.mismatches).toEqual([]);
    expect(out.rows.map((r) => [r.agentName, r.turns])).toEqual([
      ["writer", [0]],
      ["checker", [1]],
      ["writer", [2]],
    ]);
    const merged = aggregateTrajectories(
      rollout([writer(0, [S, U, A], [10, E]), writer(1, [S, U, A, 10, E, N, A], [11, E])]),
      WIDE,
    );
    expect(merged.rows.map((r) => [r.agentName, r.turns])).toEqual([["writer", [0, 1]]]);
  });
});

describe("findPrefixBreak", () => {
  it("returns null for an exact prefix and for an identical sequence", () => {
    expect(findPrefixBreak([1, 2], [1, 2, 3])).toBeNull();
    expect(findPrefixBreak([1, 2], [1, 2])).toBeNull();
  });

  it("returns the first differing position", () => {
    expect(findPrefixBreak([1, 2, 3], [1, 9, 3, 4])).toEqual({ position: 1, kind: "token_differs" });
    expect(findPrefixBreak([1, 2, 3], [1, 2])).toEqual({ position: 2, kind: "prompt_shorter" });
  });
});
