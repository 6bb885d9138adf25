/** @module The unbiased pass@k estimator of Chen et al. (2021), per task and averaged over tasks. */

/** One task's samples: how many were drawn and how many passed. */
export interface TaskCounts {
  /** Samples drawn for the task (n). */
  n: number;
  /** Samples that passed (c). */
  c: number;
}

/**
 * The probability that at least one of k samples drawn without replacement from a task's n samples passes, when c of
 * them passed: 1 − C(n−c, k) / C(n, k). Computed as the product 1 − ∏_{i=n−c+1}^{n} (1 − k/i), which never forms the
 * binomials (C(200, 100) overflows a double's exact range).
 * @param n - samples drawn for the task, ≥ 1
 * @param c - samples that passed, 0..n
 * @param k - samples the metric allows, 1..n
 * @returns pass@k of the task, in [0, 1]
 * @throws {RangeError} when n, c or k are not integers in those ranges
 * @see Chen et al., "Evaluating Large Language Models Trained on Code", arXiv:2107.03374, §2.1 and Fig. 3
 */
export function passAtK(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`pass@k: n ${n}: expected an integer >= 1`);
  if (!Number.isInteger(c) || c < 0 || c > n) throw new RangeError(`pass@k: c ${c}: expected an integer in 0..${n}`);
  if (!Number.isInteger(k) || k < 1 || k > n) throw new RangeError(`pass@k: k ${k}: expected an integer in 1..${n}`);
  // Fewer failures than k: every draw of k contains a pass.
  if (n - c < k) return 1;
  let allFail = 1;
  for (let i = n - c + 1; i <= n; i++) allFail *= 1 - k / i;
  return 1 - allFail;
}

/**
 * pass@k averaged over tasks, each task's estimate weighted equally.
 * @param tasks - per task, its n and c; every n must be ≥ k
 * @param k - samples the metric allows
 * @returns the mean of {@link passAtK} over the tasks; 0 for no tasks
 * @throws {RangeError} as {@link passAtK}
 */
export function meanPassAtK(tasks: readonly TaskCounts[], k: number): number {
  if (tasks.length === 0) return 0;
  return tasks.reduce((sum, task) => sum + passAtK(task.n, task.c, k), 0) / tasks.length;
}
