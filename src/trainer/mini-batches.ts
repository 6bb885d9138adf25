/**
 * @module PPO mini-batches: a step's rows split into consecutive runs of whole groups, one optimiser update each, as
 * verl's `actor.ppo_mini_batch_size` (counted in prompts, i.e. groups) does. Keeping groups whole keeps every
 * rollout's rows, and so its per-rollout-mean weight, inside one update.
 */

/**
 * Splits rows into mini-batches of `groupsPerMiniBatch` consecutive groups each (the last may hold fewer).
 * @param dataIds_D - the group (data id) of each row, [D]; rows of one group must be adjacent, as `assembleBatch`
 *   lays them out
 * @param groupsPerMiniBatch - groups per mini-batch; null: one mini-batch of every row
 * @returns row indices of each mini-batch, in order; empty when there are no rows
 * @throws {RangeError} when groupsPerMiniBatch is not a positive integer, or a group's rows are not adjacent
 */
export function miniBatchIndices(dataIds_D: readonly string[], groupsPerMiniBatch: number | null): number[][] {
  if (groupsPerMiniBatch !== null && (!Number.isInteger(groupsPerMiniBatch) || groupsPerMiniBatch < 1)) {
    throw new RangeError(`groupsPerMiniBatch must be a positive integer or null, got ${groupsPerMiniBatch}`);
  }
  if (dataIds_D.length === 0) return [];
  const batches: number[][] = [];
  const seen = new Set<string>();
  let current: number[] = [];
  let groupsInCurrent = 0;
  dataIds_D.forEach((dataId, i) => {
    const startsGroup = i === 0 || dataIds_D[i - 1] !== dataId;
    if (startsGroup) {
      if (seen.has(dataId)) throw new RangeError(`rows of group ${dataId} are not adjacent (row ${i})`);
      seen.add(dataId);
      if (groupsPerMiniBatch !== null && groupsInCurrent === groupsPerMiniBatch) {
        batches.push(current);
        current = [];
        groupsInCurrent = 0;
      }
      groupsInCurrent += 1;
    }
    current.push(i);
  });
  batches.push(current);
  return batches;
}
