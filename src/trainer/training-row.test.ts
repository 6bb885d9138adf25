import { describe, expect, it } from "vitest";
import { type ScoredRow, toEngineRow, trainableTokens } from "./training-row.js";

const base: ScoredRow = {
  rolloutId: "r",
  dataId: "d",
  promptTokenIds: [1, 2],
  responseTokenIds: [3, 4, 5],
  lossMask: [1, 0, 1],
  oldLogprobs: [-0.5, null, -0.25],
  policyVersions: [0],
  turns: [0, 1],
  advantage: 2,
};

describe("toEngineRow", () => {
  it("lays prompt then response region out, advantage and mask on response tokens only", () => {
    expect(toEngineRow(base)).toEqual({
      tokenIds: [1, 2, 3, 4, 5],
      lossMask: [0, 0, 1, 0, 1],
      advantages: [0, 0, 2, 0, 2],
      oldLogprobs: [0, 0, -0.5, 0, -0.25],
    });
  });

  it("omits old logprobs when a trained token has none, and passes weight and IS weights", () => {
    const engineRow = toEngineRow({ ...base, oldLogprobs: [null, null, -1], weight: 0.5, isWeights: [0.9, 1, 2] });
    expect(engineRow.oldLogprobs).toBeUndefined();
    expect(engineRow.weight).toBe(0.5);
    expect(engineRow.isWeights).toEqual([1, 1, 0.9, 1, 2]);
  });

  it("counts trainable tokens", () => {
    expect(trainableTokens(base)).toBe(2);
  });
});
