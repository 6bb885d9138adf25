/**
 * @module Advantage estimators on plain reward vectors: GRPO (group mean baseline, optional std scaling), RLOO
 * (leave-one-out baseline) and REINFORCE (batch baseline or none). Grouping and broadcasting live in group-advantage.ts.
 */

/** Added to the standard deviation before dividing, so a near-constant group does not blow up. */
export const STD_EPSILON = 1e-6;

/** Spread at or below which a group's rewards count as all equal (zero variance). */
export const ZERO_VARIANCE_TOLERANCE = 1e-12;

/**
 * Mean of a vector.
 * @param values - [N], N ≥ 1
 * @returns Σ values / N
 * @throws {RangeError} when `values` is empty
 */
export function mean(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError("mean of an empty vector");
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/**
 * Unbiased (Bessel-corrected, N − 1) standard deviation, as `torch.std` computes it in verl's GRPO estimator.
 * @param values - [N]
 * @returns sqrt(Σ (v − mean)² / (N − 1)); 0 when N < 2
 */
export function sampleStd(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const m = mean(values);
  let squares = 0;
  for (const v of values) squares += (v - m) ** 2;
  return Math.sqrt(squares / (values.length - 1));
}

/**
 * True when every reward of a group is the same (up to {@link ZERO_VARIANCE_TOLERANCE}), so no baseline can tell the
 * rollouts apart and the group carries no learning signal. A group of one is zero-variance.
 * @param rewards_G - [group]
 * @returns max − min ≤ tolerance
 */
export function isZeroVariance(rewards_G: readonly number[]): boolean {
  if (rewards_G.length < 2) return true;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const r of rewards_G) {
    min = Math.min(min, r);
    max = Math.max(max, r);
  }
  return max - min <= ZERO_VARIANCE_TOLERANCE;
}

/**
 * Group-relative advantages: each rollout's reward minus its group's mean, divided by the group's standard deviation
 * plus {@link STD_EPSILON} when `normByStd` is set (GRPO).
 * @param rewards_G - final reward of each rollout in one group, [group]
 * @param normByStd - divide by (std + 1e-6), std unbiased (N − 1); false keeps only the mean baseline
 * @returns advantages, [group]; all zeros when the group is zero-variance
 * @throws {RangeError} when `rewards_G` is empty
 * @see DeepSeekMath, arXiv:2402.03300, §4.1.2 (outcome supervision: Â = (r − mean(r)) / std(r))
 */
export function grpoAdvantages(rewards_G: readonly number[], normByStd: boolean): number[] {
  const baseline = mean(rewards_G);
  if (isZeroVariance(rewards_G)) return rewards_G.map(() => 0);
  const scale = normByStd ? sampleStd(rewards_G) + STD_EPSILON : 1;
  return rewards_G.map((r) => (r - baseline) / scale);
}

/**
 * Leave-one-out advantages: each rollout's reward minus the mean of the other rollouts' rewards of its group,
 * Â_i = r_i − (Σ_{j≠i} r_j) / (G − 1) = G/(G − 1) · (r_i − mean(r)).
 * @param rewards_G - [group]
 * @returns advantages, [group]; all zeros for a zero-variance group (including a group of one)
 * @throws {RangeError} when `rewards_G` is empty
 * @see Ahmadian et al. 2024, "Back to Basics: Revisiting REINFORCE Style Optimization for Learning from Human
 *   Feedback in LLMs", arXiv:2402.14740, §3 (RLOO)
 */
export function rlooAdvantages(rewards_G: readonly number[]): number[] {
  if (rewards_G.length === 0) throw new RangeError("RLOO advantages of an empty group");
  if (isZeroVariance(rewards_G)) return rewards_G.map(() => 0);
  let total = 0;
  for (const r of rewards_G) total += r;
  const others = rewards_G.length - 1;
  return rewards_G.map((r) => r - (total - r) / others);
}

/**
 * REINFORCE advantages over a whole batch (groups ignored): with `batch_mean`, reward minus the batch's mean reward (a
 * constant baseline that lowers variance without bias); with `none`, the raw reward. Unlike GRPO and RLOO, a group
 * whose rewards are all equal still gets non-zero advantages here whenever its reward differs from the batch mean.
 * @param rewards_B - reward of every sample of the batch, [batch]
 * @param baseline - `batch_mean` or `none`
 * @returns advantages, [batch]
 * @see Williams 1992, "Simple statistical gradient-following algorithms for connectionist reinforcement learning"
 */
export function reinforceAdvantages(rewards_B: readonly number[], baseline: "batch_mean" | "none"): number[] {
  if (baseline === "none" || rewards_B.length === 0) return [...rewards_B];
  const b = mean(rewards_B);
  return rewards_B.map((r) => r - b);
}
