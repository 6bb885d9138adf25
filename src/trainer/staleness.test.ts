/** The staleness budget: admission, the choice that keeps every pending group trainable, and the lag statistics. */
import { describe, expect, it } from "vitest";
import type { GroupPlan } from "./rollout-groups.js";
import { chooseWithinBudget, inFlightLimit, lagStats, leavesFeasible, pastDeadline } from "./staleness.js";

const plan = (id: string, launchVersion: number): GroupPlan => ({
  groupId: id,
  dataIndex: 0,
  input: null,
  isTrain: true,
  batchIdx: launchVersion,
  launchVersion,
  rolloutIds: [`${id}-0`],
});
const completeOnly =
  (...ids: string[]) =>
  (p: GroupPlan) =>
    ids.includes(p.groupId);
const ids = (plans: readonly GroupPlan[] | null) => plans?.map((p) => p.groupId) ?? null;

/**
 * Simulates the async loop with B groups a step and bound η: launches up to the in-flight limit each step, then
 * trains what `chooseWithinBudget` picks, with each group's completion time drawn from `durationOf` (in steps; a
 * group completes once the wait has gone on that long). Returns each trained group's lag and the groups dropped.
 */
function simulate(B: number, eta: number, cap: number, durationOf: (k: number) => number, steps: number) {
  const budget = { trainBatchSize: B, maxStaleness: eta };
  let pending: GroupPlan[] = [];
  const doneAt = new Map<string, number>();
  let launched = 0;
  let clock = 0;
  const lags: number[] = [];
  for (let version = 0; version < steps; version++) {
    while (pending.length < inFlightLimit(budget, cap)) {
      pending.push(plan(`g${launched}`, version));
      doneAt.set(`g${launched}`, clock + durationOf(launched));
      launched += 1;
    }
    expect(pastDeadline(pending, version, budget)).toEqual([]);
    let chosen: GroupPlan[] | null = null;
    while (chosen === null) {
      chosen = chooseWithinBudget(pending, (p) => (doneAt.get(p.groupId) ?? 0) <= clock, version, budget);
      if (chosen === null) clock += 1;
    }
    for (const c of chosen) lags.push(version - c.launchVersion);
    const chosenIds = new Set(chosen.map((c) => c.groupId));
    pending = pending.filter((p) => !chosenIds.has(p.groupId));
  }
  return { lags, launched };
}

describe("staleness budget", () => {
  it("admits (η + 1) · B groups in flight, capped by async_train_batch_size", () => {
    expect(inFlightLimit({ trainBatchSize: 4, maxStaleness: 2 }, 100)).toBe(12);
    expect(inFlightLimit({ trainBatchSize: 4, maxStaleness: 2 }, 10)).toBe(10);
    expect(inFlightLimit({ trainBatchSize: 1, maxStaleness: 1 }, 3)).toBe(2);
  });

  it("a group admitted past the bound could not train in time: the bound is tight", () => {
    const budget = { trainBatchSize: 2, maxStaleness: 1 };
    // At version 0, (1 + 1) · 2 = 4 groups (deadline 1) fill the steps at versions 0 and 1 exactly.
    const four = [plan("a", 0), plan("b", 0), plan("c", 0), plan("d", 0)];
    expect(pastDeadline(four, 0, budget)).toEqual([]);
    expect(ids(pastDeadline([...four, plan("e", 0)], 0, budget))).toEqual(["e"]);
  });

  it("trains the first B complete groups in launch order when what it leaves can still train in time", () => {
    const budget = { trainBatchSize: 1, maxStaleness: 1 };
    const pending = [plan("a", 0), plan("b", 0)];
    expect(ids(chooseWithinBudget(pending, completeOnly("b"), 0, budget))).toEqual(["b"]);
    expect(ids(chooseWithinBudget(pending, completeOnly("a", "b"), 0, budget))).toEqual(["a"]);
    expect(chooseWithinBudget(pending, completeOnly(), 0, budget)).toBeNull();
  });

  it("waits for a slow group that is due rather than training a fast younger one (the worked example, η = 2, B = 1)", () => {
    const budget = { trainBatchSize: 1, maxStaleness: 2 };
    // Version 1: a and b (deadline 2) are pending, d (deadline 3) is complete. Training d leaves a and b one place.
    const pending = [plan("a", 0), plan("b", 0), plan("d", 1)];
    expect(leavesFeasible([plan("a", 0), plan("b", 0)], 1, budget)).toBe(false);
    expect(chooseWithinBudget(pending, completeOnly("d"), 1, budget)).toBeNull();
    expect(ids(chooseWithinBudget(pending, completeOnly("b", "d"), 1, budget))).toEqual(["b"]);
  });

  it("never splits the batch: waits for B complete groups while B are pending", () => {
    const budget = { trainBatchSize: 2, maxStaleness: 1 };
    const pending = [plan("a", 0), plan("b", 0), plan("c", 0)];
    expect(chooseWithinBudget(pending, completeOnly("c"), 0, budget)).toBeNull();
    expect(ids(chooseWithinBudget([plan("a", 0)], completeOnly("a"), 0, budget))).toEqual(["a"]);
  });

  it("a mix of fast and minutes-long groups: every group trains, none past η, none dropped", () => {
    for (const [B, eta] of [
      [1, 1],
      [2, 1],
      [4, 2],
      [3, 3],
    ] as const) {
      // Every third group takes 5 steps' time, the rest none: slow groups are passed by fast ones but never dropped.
      const { lags } = simulate(B, eta, 64, (k) => (k % 3 === 0 ? 5 : 0), 30);
      expect(lags).toHaveLength(30 * B);
      expect(Math.max(...lags)).toBeLessThanOrEqual(eta);
      expect(lags.some((lag) => lag > 0)).toBe(true);
    }
  });

  it("finds the groups a resume with a tighter budget left past saving, and only those", () => {
    // Checkpoint of a run with η = 3, B = 2 at version 5, resumed with η = 1, B = 1: v2 and v3 are past their
    // deadlines (3, 4); v4 and v4b are both due now with one place; v5 has the step at version 6 left.
    const pending = [plan("v2", 2), plan("v3", 3), plan("v4", 4), plan("v4b", 4), plan("v5", 5)];
    expect(ids(pastDeadline(pending, 5, { trainBatchSize: 1, maxStaleness: 1 }))).toEqual(["v2", "v3", "v4b"]);
    expect(pastDeadline(pending, 5, { trainBatchSize: 2, maxStaleness: 3 })).toEqual([]);
  });

  it("reports the lag of trained tokens (token-weighted mean) and groups", () => {
    const rows = [
      { policyVersions: [3], tokens: 30 },
      { policyVersions: [1, 2], tokens: 10 }, // merged calls of versions 1 and 2 count at the oldest
      { policyVersions: [0], tokens: 0 }, // nothing trained: not counted
    ];
    expect(lagStats(3, rows, [3, 1, null])).toEqual({
      tokenMin: 0,
      tokenMean: (0 * 30 + 2 * 10) / 40,
      tokenMax: 2,
      groupMin: 0,
      groupMean: 1,
      groupMax: 2,
    });
    expect(lagStats(0, [], [])).toEqual({
      tokenMin: null,
      tokenMean: null,
      tokenMax: null,
      groupMin: null,
      groupMean: null,
      groupMax: null,
    });
  });
});
