import { describe, expect, it } from "vitest";
import { runLookups } from "./agent.js";
import { lookupsOf, MAX_CALLS, rolloutReward, scoreReply, TOOL_FAILURE_RATE, toolFails } from "./task.js";

describe("flaky-lookup task", () => {
  it("reads the digits of an input and refuses anything else", () => {
    expect(lookupsOf(" 4 9 2 ")).toEqual([4, 9, 2]);
    expect(() => lookupsOf("4,9")).toThrow(RangeError);
    expect(() => lookupsOf("")).toThrow(RangeError);
  });

  it("scores half for digits among the first three characters, half for starting with the digit asked for", () => {
    expect(scoreReply("444", 4)).toBe(1);
    expect(scoreReply("4ab", 4)).toBeCloseTo(0.5 + 0.5 / 3);
    expect(scoreReply("123", 4)).toBe(0.5);
    expect(scoreReply("abc", 4)).toBe(0);
    expect(scoreReply("", 4)).toBe(0);
    expect(rolloutReward([1, 0.5], 3)).toBe(0.5);
  });

  it("fails the tool at about its rate, the same way for the same rollout and call", () => {
    const draws = Array.from({ length: 4000 }, (_, i) => toolFails(`r-${i}`, i % 7));
    const rate = draws.filter(Boolean).length / draws.length;
    expect(Math.abs(rate - TOOL_FAILURE_RATE)).toBeLessThan(0.03);
    expect(toolFails("r-1", 2)).toBe(toolFails("r-1", 2));
  });

  it("retries a lookup after each tool failure, so rollouts of one input make from 1 to MAX_CALLS calls", async () => {
    const calls = new Set<number>();
    for (let i = 0; i < 300; i++) {
      const asked: string[] = [];
      const outcome = await runLookups(
        async (message) => {
          asked.push(message);
          return message.slice(-1).repeat(3);
        },
        [4, 9, 2],
        `rollout-${i}`,
      );
      expect(outcome.calls).toBe(asked.length);
      expect(outcome.calls).toBeLessThanOrEqual(MAX_CALLS);
      // Every reached lookup answered its own digit: score 1 each; unreached ones count 0.
      expect(outcome.reward).toBeCloseTo(outcome.scores.length / 3);
      calls.add(outcome.calls);
    }
    expect(Math.min(...calls)).toBe(3);
    expect(Math.max(...calls)).toBe(MAX_CALLS);
    const single = await runLookups(async () => "7", [7], "rollout-x");
    expect(single.calls).toBeGreaterThanOrEqual(1);
  });
});
