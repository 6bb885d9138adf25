/**
 * @module How long a run name may be: every rollout id a run creates is its name followed by a suffix
 * (`-eEPOCH-dINDEX-K`, `-vSTEP-dINDEX-0`), and the gateway refuses ids longer than {@link MAX_ROLLOUT_ID_LENGTH}, so
 * the longest suffix a run appends sets the room left for its name. The longest ids are built with the same functions
 * the loop uses.
 */
import { MAX_ROLLOUT_ID_LENGTH } from "../protocol/index.js";
import type { TrainerConfig } from "./config.js";
import type { DataItem } from "./data-order.js";
import { totalStepsOf } from "./loop.js";
import { groupRolloutId, trainGroupId } from "./rollout-groups.js";
import { validationRolloutIds } from "./validation.js";

/**
 * The longest name a run may take so that each of its rollout ids still fits {@link MAX_ROLLOUT_ID_LENGTH}.
 * @param runName - the name the ids were built with (each id starts with it)
 * @param ids - the longest rollout ids the run creates under that name
 * @returns the limit less the longest suffix, in characters (the limit itself when there are no ids)
 * @throws {RangeError} when an id does not start with `runName`
 */
export function maxRunNameLength(runName: string, ids: readonly string[]): number {
  let longestSuffix = 0;
  for (const id of ids) {
    if (!id.startsWith(runName)) throw new RangeError(`rollout id ${id} does not start with the run name ${runName}`);
    longestSuffix = Math.max(longestSuffix, id.length - runName.length);
  }
  return MAX_ROLLOUT_ID_LENGTH - longestSuffix;
}

/** The largest `index` among the inputs; -1 for none. */
function lastIndex(items: readonly DataItem[]): number {
  return items.reduce((last, item) => Math.max(last, item.index), -1);
}

/**
 * The longest rollout ids the training loop creates for this config and data: a train rollout of the last epoch the
 * run reaches, the largest input index and the last place in its group; and a validation rollout after the last step
 * that validates, of the largest validation index. The epoch is that of the last group the steps train on: an async
 * run that drops stale groups launches replacements for them, which may reach a later epoch.
 * @param config - trainer config (`name`, `n`, `train_batch_size`, steps, `val_interval`)
 * @param trainData - the train inputs (none: no train id)
 * @param valData - the validation inputs, or null for none
 * @returns the ids, built with the loop's own id functions
 */
export function longestTrainingRolloutIds(
  config: Readonly<TrainerConfig>,
  trainData: readonly DataItem[],
  valData: readonly DataItem[] | null,
): string[] {
  const totalSteps = totalStepsOf(config, trainData.length);
  const groups = totalSteps * config.train_batch_size;
  const lastEpoch = Math.floor((groups - 1) / Math.max(1, trainData.length));
  const ids =
    trainData.length === 0
      ? []
      : [groupRolloutId(trainGroupId(config.name, lastEpoch, lastIndex(trainData)), config.n - 1)];
  const lastValIndex = valData === null ? -1 : lastIndex(valData);
  if (lastValIndex >= 0 && config.val_interval > 0) {
    const lastValStep = Math.floor(totalSteps / config.val_interval) * config.val_interval;
    ids.push(...validationRolloutIds(config.name, lastValStep, [{ index: lastValIndex, input: null }]));
  }
  return ids;
}
