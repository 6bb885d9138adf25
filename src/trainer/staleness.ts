/**
 * @module Async mode's staleness budget: how many groups may be in flight, which complete groups a step may train so
 * that every group left behind can still train within `max_staleness` versions, and the policy lag of what trained.
 *
 * A group launched at policy version L may train at any version up to its deadline L + η (η = `max_staleness`):
 * its model calls are stamped ≥ L, so it then lags by at most η. Each step trains B = `train_batch_size` groups and
 * bumps the version by one, so the steps at versions v … D hold (D − v + 1)·B places for groups due by D. Deadlines
 * grow with launch order, so earliest-deadline-first is launch order, and the schedule stays feasible exactly when
 *
 * 1. **admission**: a group launched at version v (deadline v + η, the latest of all) fits while fewer than
 *    (η + 1)·B groups are launched and not yet trained. That is AReaL's bound, launched ≤ (v + η + 1)·B, written
 *    with what was consumed (v·B when every step trains B groups and bumps the version); and
 * 2. **choice**: the step at version v trains the first B complete groups in launch order, unless that leaves the
 *    i-th remaining group (launch order, from 0) with fewer than i + 1 places before its deadline, (D − v)·B; then it
 *    waits for an older group to complete. Taking the oldest complete groups first fills every deadline's places the
 *    most, so if this choice fails, every choice does.
 *
 * Worked example, η = 2, B = 1: at v = 0 groups a, b, c are launched (deadline 2). c finishes first and trains.
 * At v = 1, d is launched (deadline 3); if d finishes before a and b, training d would leave a and b both due at
 * version 2 with one place: the step waits for a or b instead. A step whose update was skipped keeps its version, so
 * it only adds places; the bound still holds.
 * @see Fu et al., "AReaL: A Large-Scale Asynchronous Reinforcement Learning System for Language Reasoning",
 *   arXiv:2505.24298 (staleness-aware training: the rollout controller refuses new generations past the budget)
 */
import type { GroupPlan } from "./rollout-groups.js";

/** What the budget needs of the config: groups per step B and the staleness bound η (versions). */
export interface StalenessBudget {
  trainBatchSize: number;
  maxStaleness: number;
}

/**
 * Groups that may be launched and not yet trained at once: (η + 1)·B, and no more than `async_train_batch_size`.
 * @param budget - B and η
 * @param asyncTrainBatchSize - the configured cap on groups in flight
 * @returns the in-flight limit (groups)
 */
export function inFlightLimit(budget: StalenessBudget, asyncTrainBatchSize: number): number {
  return Math.min(asyncTrainBatchSize, (budget.maxStaleness + 1) * budget.trainBatchSize);
}

/** The last policy version a group may train at: its launch version plus η. */
export function deadlineVersion(plan: Pick<GroupPlan, "launchVersion">, maxStaleness: number): number {
  return plan.launchVersion + maxStaleness;
}

/**
 * Whether groups left pending after the step at `version` can each still train by its deadline: the i-th of them
 * (launch order, from 0) needs i + 1 places in the steps at versions version+1 … its deadline.
 * @param left - pending groups not trained by this step, launch order
 * @param version - policy version the step trains at
 * @param budget - B and η
 */
export function leavesFeasible(left: readonly GroupPlan[], version: number, budget: StalenessBudget): boolean {
  return left.every(
    (plan, i) => i + 1 <= (deadlineVersion(plan, budget.maxStaleness) - version) * budget.trainBatchSize,
  );
}

/**
 * Async choice: the first B complete groups in launch order (never a split group), once their training leaves every
 * other pending group able to train by its deadline; null while the step must wait.
 * @param pending - launched groups not trained yet, launch order
 * @param isComplete - whether every rollout of a group is terminal
 * @param version - policy version the step trains at
 * @param budget - B and η
 * @returns the groups to train, or null to keep waiting
 */
export function chooseWithinBudget(
  pending: readonly GroupPlan[],
  isComplete: (plan: GroupPlan) => boolean,
  version: number,
  budget: StalenessBudget,
): GroupPlan[] | null {
  if (pending.length === 0) return null;
  const chosen = pending.filter(isComplete).slice(0, budget.trainBatchSize);
  if (chosen.length < Math.min(budget.trainBatchSize, pending.length)) return null;
  const chosenIds = new Set(chosen.map((plan) => plan.groupId));
  const left = pending.filter((plan) => !chosenIds.has(plan.groupId));
  return leavesFeasible(left, version, budget) ? chosen : null;
}

/**
 * Groups that can no longer train by their deadline whatever the step does: the i-th pending group (launch order)
 * with fewer than i + 1 places in the steps at versions `version` … its deadline. The admission bound never makes
 * one; a resume with a smaller `max_staleness` or `train_batch_size` than the checkpoint's run can. Those are the
 * only groups the loop drops.
 * @param pending - launched groups not trained yet, launch order
 * @param version - policy version the next step trains at
 * @param budget - B and η
 * @returns the groups past saving, launch order
 */
export function pastDeadline(pending: readonly GroupPlan[], version: number, budget: StalenessBudget): GroupPlan[] {
  const doomed: GroupPlan[] = [];
  let kept = 0;
  for (const plan of pending) {
    const places = (deadlineVersion(plan, budget.maxStaleness) - version + 1) * budget.trainBatchSize;
    if (kept + 1 <= places) kept += 1;
    else doomed.push(plan);
  }
  return doomed;
}

/** Policy lag (versions) of a step's training data: per trained token, and per trained group. */
export interface LagStats {
  tokenMin: number | null;
  tokenMean: number | null;
  tokenMax: number | null;
  groupMin: number | null;
  groupMean: number | null;
  groupMax: number | null;
}

/**
 * Policy lag of what a step trained: each row's tokens count at the row's oldest policy version (exact for
 * transition rows; a trajectory row merging calls of several versions counts at its oldest, an upper bound), and each
 * group at its oldest call.
 * @param versionAtTrain - the policy version the step's update started from
 * @param rows - trained rows: their distinct policy versions and trainable token count
 * @param groupOldest - oldest call version of each trained group (null: the group made no call)
 * @returns min, token-weighted mean and max lag over tokens; min, mean and max over groups (versions; null when none)
 */
export function lagStats(
  versionAtTrain: number,
  rows: readonly { policyVersions: readonly number[]; tokens: number }[],
  groupOldest: readonly (number | null)[],
): LagStats {
  const tokenLags = rows.flatMap((row) =>
    row.tokens > 0 && row.policyVersions.length > 0
      ? [{ lag: versionAtTrain - Math.min(...row.policyVersions), tokens: row.tokens }]
      : [],
  );
  const tokens = tokenLags.reduce((a, r) => a + r.tokens, 0);
  const groupLags = groupOldest.flatMap((v) => (v === null ? [] : [versionAtTrain - v]));
  const extremes = (values: number[]) =>
    values.length === 0 ? { min: null, max: null } : { min: Math.min(...values), max: Math.max(...values) };
  const tokenRange = extremes(tokenLags.map((r) => r.lag));
  const groupRange = extremes(groupLags);
  return {
    tokenMin: tokenRange.min,
    tokenMean: tokens === 0 ? null : tokenLags.reduce((a, r) => a + r.lag * r.tokens, 0) / tokens,
    tokenMax: tokenRange.max,
    groupMin: groupRange.min,
    groupMean: groupLags.length === 0 ? null : groupLags.reduce((a, b) => a + b, 0) / groupLags.length,
    groupMax: groupRange.max,
  };
}
