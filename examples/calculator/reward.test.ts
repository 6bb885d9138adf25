import { describe, expect, it } from "vitest";
import { computeReward, parseAnswer } from "./reward.js";

describe("parseAnswer", () => {
  it("reads the number of an ANSWER line, negative and decimal included", () => {
    expect(parseAnswer("ANSWER: 33")).toBe(33);
    expect(parseAnswer("ANSWER:-8")).toBe(-8);
    expect(parseAnswer("  ANSWER: 2.5  ")).toBe(2.5);
  });

  it("takes the last well-formed line when there are several", () => {
    expect(parseAnswer("ANSWER: 1\nthinking again\nANSWER: 2")).toBe(2);
  });

  it.each([
    [null],
    [""],
    ["33"],
    ["answer: 33"],
    ["ANSWER: thirty-three"],
    ["ANSWER: 33 apples"],
    ["The ANSWER: 33"],
    ["ANSWER: 3e1"],
  ])("finds no answer in %j", (content) => {
    expect(parseAnswer(content)).toBeUndefined();
  });
});

describe("computeReward", () => {
  it("gives 1 for the exact answer, with or without the tool", () => {
    expect(computeReward({ finalContent: "ANSWER: 33", expected: 33, toolUsed: true })).toEqual({
      value: 1,
      reason: "correct",
      answer: 33,
    });
    expect(computeReward({ finalContent: "ANSWER: 33", expected: 33, toolUsed: false }).value).toBe(1);
  });

  it("compares numerically, so 33.0 matches 33 and -0 matches 0", () => {
    expect(computeReward({ finalContent: "ANSWER: 33.0", expected: 33, toolUsed: false }).value).toBe(1);
    expect(computeReward({ finalContent: "ANSWER: -0", expected: 0, toolUsed: false }).value).toBe(1);
  });

  it("gives 0.1 for a well-formed wrong answer and 0.1 more for a successful tool call", () => {
    expect(computeReward({ finalContent: "ANSWER: 34", expected: 33, toolUsed: false })).toEqual({
      value: 0.1,
      reason: "wrong",
      answer: 34,
    });
    expect(computeReward({ finalContent: "ANSWER: 34", expected: 33, toolUsed: true }).value).toBeCloseTo(0.2, 12);
  });

  it("gives only the tool term when there is no well-formed answer", () => {
    expect(computeReward({ finalContent: "33", expected: 33, toolUsed: false })).toEqual({
      value: 0,
      reason: "no_answer",
    });
    expect(computeReward({ finalContent: null, expected: 33, toolUsed: true }).value).toBe(0.1);
  });
});
