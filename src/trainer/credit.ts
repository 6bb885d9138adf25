/**
 * @module Credit assignment (`trainer.credit`): how a rollout's final reward R and its per-call rewards r_t (reward
 * events naming a call, intermediate rules) become one return G_t per model call, and how the returns become
 * per-call advantages measured against the rollout-level group baseline.
 *
 * Modes, for a rollout with calls t = 0 … T−1 in order:
 * ```
 * broadcast   G_t = R + Σ_k r_k                          (every call the same; without call rewards: today's R)
 * per_call    G_t = R + r_t                              (each call's own reward plus the final reward)
 * discounted  G_t = Σ_{k≥t} γ^{k−t} r'_k,  r'_k = r_k, r'_{T−1} = r_{T−1} + R   (the final reward arrives last)
 * ```
 * Advantage (one group baseline per rollout, baselines.ts): the rollout's statistic value is v = mean_t G_t (for
 * broadcast v = R + Σ r, its reward), the estimator turns the group's values into baseline b and scale s, and
 * A_t = (G_t − b) / s. Under broadcast this is exactly the rollout-level advantage (GRPO: (R − mean) / (std + ε));
 * under the others, calls of one rollout differ by their own returns around the same baseline.
 *
 * Worked example (GRPO, norm_by_std off, per_call): a group of two rollouts, R = [1, 0], call rewards
 * [[−0.5, 0], [0, 0]] → G = [[0.5, 1], [0, 0]], v = [0.75, 0], b = 0.375 → A = [[0.125, 0.625], [−0.375, −0.375]].
 * @see LightningRL, "Agent Lightning: Train ANY AI Agents with Reinforcement Learning", arXiv:2508.03680 §3.2
 *   (a multi-call run as per-call transitions; the final reward assigned to each call); DeepSeekMath, arXiv:2402.03300
 *   §4.1.3 (GRPO process supervision: step rewards, advantage = sum of the normalised rewards that follow)
 */
import type { Baseline } from "./baselines.js";
import type { ScoredRow, TrainingRow } from "./training-row.js";

/** How returns are formed; see the module doc. */
export type CreditMode = "broadcast" | "per_call" | "discounted";

/**
 * Each call's return under a credit mode.
 * @param finalReward - R, the rollout's final reward (filled when missing)
 * @param callRewards_T - r_t, each call's own reward (events + intermediate rules), [calls]
 * @param mode - broadcast, per_call or discounted
 * @param gamma - γ ∈ [0, 1] (discounted only)
 * @returns G_t, [calls]; empty for a rollout without calls
 */
export function callReturns(
  finalReward: number,
  callRewards_T: readonly number[],
  mode: CreditMode,
  gamma: number,
): number[] {
  const count = callRewards_T.length;
  if (mode === "broadcast") {
    const total = callRewards_T.reduce((sum, r) => sum + r, finalReward);
    return callRewards_T.map(() => total);
  }
  if (mode === "per_call") return callRewards_T.map((r) => finalReward + r);
  const returns = new Array<number>(count).fill(0);
  let next = 0;
  for (let t = count - 1; t >= 0; t--) {
    const reward = (callRewards_T[t] ?? 0) + (t === count - 1 ? finalReward : 0);
    next = reward + gamma * next;
    returns[t] = next;
  }
  return returns;
}

/**
 * The value a rollout contributes to its group's statistics: the mean of its returns (its final reward when it has
 * no calls).
 * @param finalReward - R
 * @param returns_T - G_t, [calls]
 * @returns mean_t G_t, or R
 */
export function rolloutValue(finalReward: number, returns_T: readonly number[]): number {
  return returns_T.length === 0 ? finalReward : returns_T.reduce((sum, g) => sum + g, 0) / returns_T.length;
}

/**
 * Scores one row from its calls' returns: A_t = (G_t − b) / s on each mask-1 token of call t. A row of one call (or
 * whose calls all have the same advantage) gets a scalar `advantage`; a merged row whose calls differ also gets
 * `tokenAdvantages`.
 * @param row - a training row; `tokenTurns` tells which call each token belongs to (absent: all `turns[0]`)
 * @param returns_T - the rollout's G_t, [calls], indexed by turn
 * @param baseline - the rollout's baseline and scale
 * @returns the row with `advantage` (the first call's) and, when needed, `tokenAdvantages`
 */
export function scoreRow(row: TrainingRow, returns_T: readonly number[], baseline: Baseline): ScoredRow {
  const advantageOf = (turn: number) => ((returns_T[turn] ?? 0) - baseline.baseline) / baseline.scale;
  const first = advantageOf(row.turns[0] ?? 0);
  const perTurn = row.turns.map(advantageOf);
  if (row.tokenTurns === undefined || perTurn.every((a) => a === first)) return { ...row, advantage: first };
  const tokenAdvantages = row.lossMask.map((m, i) => (m === 1 ? advantageOf(row.tokenTurns?.[i] ?? 0) : 0));
  return { ...row, advantage: first, tokenAdvantages };
}
