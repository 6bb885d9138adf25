import { describe, expect, it } from "vitest";
import type { TaskOutcome } from "./eval-rollouts.js";
import { formatEvalCsv, formatEvalTable, summariseEval } from "./summary.js";

function task(dataIndex: number, rewards: (number | "failed")[]): TaskOutcome {
  return {
    dataIndex,
    rollouts: rewards.map((r, k) => ({
      rolloutId: `eval-d${dataIndex}-${k}`,
      completed: r !== "failed",
      rewarded: r !== "failed",
      reward: r === "failed" ? 0 : r,
    })),
  };
}

describe("summariseEval", () => {
  // Task 0: 2 of 3 pass; task 1: none passes (one 0.5 below the threshold, one failed rollout).
  const tasks = [task(0, [1, 1, 0.2]), task(1, [0.5, "failed", 0])];

  it("counts passes per task and averages pass@k over tasks", () => {
    const summary = summariseEval(tasks, [1, 2], 1);
    expect(summary.perTask.map((t) => [t.passed, t.completed])).toEqual([
      [2, 3],
      [0, 2],
    ]);
    // pass@1 = (2/3 + 0) / 2; pass@2 = (1 - C(1,2)/C(3,2) + 0) / 2 = 1/2
    expect(summary.passAtK[0]?.value).toBeCloseTo(1 / 3, 12);
    expect(summary.passAtK[1]?.value).toBeCloseTo(0.5, 12);
    expect(summary.meanReward).toBeCloseTo(2.7 / 6, 12);
    expect(summary.completedShare).toBeCloseTo(5 / 6, 12);
  });

  it("does not pass a failed rollout even when its reward reaches the threshold", () => {
    const summary = summariseEval([task(0, ["failed"])], [1], -1);
    expect(summary.passAtK[0]?.value).toBe(0);
  });

  it("prints a table and a CSV of the same figures", () => {
    const summary = summariseEval(tasks, [1, 2], 1);
    const table = formatEvalTable(summary);
    expect(table).toMatch(/^pass@1 \(reward >= 1\)\s+0\.3333$/m);
    expect(table).toMatch(/^completed\s+83\.3%$/m);
    const csv = formatEvalCsv(summary);
    expect(csv.split("\n").slice(0, 3)).toEqual([
      "data_index,samples,passed,completed,mean_reward",
      `0,3,2,3,${2.2 / 3}`,
      "1,3,0,2,0.16666666666666666",
    ]);
    expect(csv).toContain("\npass@2,0.5\n");
  });
});
