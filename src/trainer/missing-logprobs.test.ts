/** @module Tests of finding, counting and filling rows that lack recorded logprobs. */
import { describe, expect, it } from "vitest";
import { flooredLogprobTokens, lacksLogprobs, withRecomputedLogprobs } from "./missing-logprobs.js";
import type { ScoredRow } from "./training-row.js";

function row(oldLogprobs: (number | null)[], lossMask: number[]): ScoredRow {
  return {
    rolloutId: "r1",
    dataId: "d1",
    promptTokenIds: [1, 2],
    responseTokenIds: oldLogprobs.map((_, i) => 10 + i),
    lossMask,
    oldLogprobs,
    policyVersions: [0],
    turns: [0],
    advantage: 1,
  };
}

describe("missing logprobs", () => {
  it("a row lacks logprobs only when a trained (mask-1) position has none", () => {
    // Context tokens between merged calls carry mask 0 and a null logprob: that is not missing.
    expect(lacksLogprobs(row([-0.1, null, -0.3], [1, 0, 1]))).toBe(false);
    expect(lacksLogprobs(row([-0.1, null, -0.3], [1, 1, 1]))).toBe(true);
  });

  it("fills only the missing trained positions with the recomputed values, keeping recorded ones", () => {
    const rows = [row([-0.1, -0.2], [1, 1]), row([null, -0.5, null, null], [1, 1, 0, 1])];
    // Engine logprobs over prompt ⧺ response: positions 0..1 are the prompt.
    const recomputed = [[0, -9, -1.1, -1.2, -1.3, -1.4]];
    const { rows: out, filledTokens } = withRecomputedLogprobs(rows, [1], recomputed);
    expect(out[0]).toBe(rows[0]);
    expect(out[1]?.oldLogprobs).toEqual([-1.1, -0.5, null, -1.4]);
    expect(filledTokens).toBe(2);
    expect(lacksLogprobs(out[1]!)).toBe(false);
  });

  it("rejects recomputed logprobs that do not line up with the rows", () => {
    const rows = [row([null], [1])];
    expect(() => withRecomputedLogprobs(rows, [0], [])).toThrow(RangeError);
    expect(() => withRecomputedLogprobs(rows, [0], [[0, 0]])).toThrow(/3 tokens, got 2/);
  });

  it("counts trained tokens whose recorded logprob is below the engine's floor", () => {
    const rows = [row([-9999, -0.5, -60], [1, 1, 0]), row([-51, null], [1, 1])];
    expect(flooredLogprobTokens(rows)).toBe(2);
  });
});
