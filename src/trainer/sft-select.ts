/**
 * @module Which recorded rollouts SFT trains on: the gateway's succeeded rollouts filtered by id prefix (a run),
 * metadata (a tag), data id, train/validation, a reward threshold, and best-of-N per input (rejection sampling).
 * Reads through `GatewayClient` only.
 */
import type { GatewayClient } from "../gateway/client.js";
import { dataIdOf, type Rollout } from "../protocol/index.js";
import type { RolloutRecord } from "./batch.js";
import type { SftConfig } from "./sft-config.js";
import { extractTriplets } from "./triplets.js";

/** The selection rules (the `select` section of the SFT config). */
export type SftSelect = SftConfig["select"];

/** Selected rollouts with their events and rewards, in the gateway's creation order. */
export interface SelectedRollouts {
  records: RolloutRecord[];
  /** Final reward of each record, same order. */
  rewards: number[];
  /** Succeeded rollouts that matched the id, metadata, data-id and is_train rules (before reward and best-of-N). */
  matched: number;
}

/**
 * True when a rollout passes the rules that need no events: id prefix, metadata pairs, data ids.
 * @param rollout - a stored rollout
 * @param select - the rules
 */
export function matchesRollout(rollout: Rollout, select: SftSelect): boolean {
  if (select.id_prefix !== null && !rollout.rollout_id.startsWith(select.id_prefix)) return false;
  const metadata = rollout.metadata as Record<string, unknown>;
  for (const [key, value] of Object.entries(select.metadata)) if (metadata[key] !== value) return false;
  if (select.data_ids !== null && !select.data_ids.includes(dataIdOf(rollout.input))) return false;
  return true;
}

/**
 * Best-of-N: the index of the highest-reward record of each data id, first one on a tie, in record order.
 * @param records - candidate rollouts
 * @param rewards - their rewards, same order
 * @returns indices into `records`, ascending
 */
export function bestOfN(records: readonly RolloutRecord[], rewards: readonly number[]): number[] {
  const best = new Map<string, number>();
  records.forEach((record, i) => {
    const current = best.get(record.dataId);
    if (current === undefined || (rewards[i] as number) > (rewards[current] as number)) best.set(record.dataId, i);
  });
  return [...best.values()].sort((a, b) => a - b);
}

/**
 * Reads the selected rollouts from the gateway: succeeded rollouts matching {@link matchesRollout}, their triplet
 * events and final rewards, then the reward threshold and best-of-N. A rollout without a data id is its own group.
 * @param client - gateway client of the gateway holding the rollouts
 * @param select - the rules
 * @param rewardFillnaValue - reward of a rollout that posted none
 * @returns the records and rewards kept, and how many matched before the reward rules
 * @throws whatever the gateway client throws
 */
export async function selectRollouts(
  client: GatewayClient,
  select: SftSelect,
  rewardFillnaValue: number,
): Promise<SelectedRollouts> {
  const query = { states: ["succeeded"] as const, ...(select.is_train === null ? {} : { isTrain: select.is_train }) };
  const matched = (await client.listAllRollouts(query)).filter((rollout) => matchesRollout(rollout, select));
  let records: RolloutRecord[] = [];
  let rewards: number[] = [];
  for (const rollout of matched) {
    const dataId = dataIdOf(rollout.input) || rollout.rollout_id;
    const events = await client.getTripletEvents(rollout.rollout_id);
    const reward = extractTriplets(rollout.rollout_id, dataId, events, rewardFillnaValue).reward;
    if (select.min_reward !== null && reward < select.min_reward) continue;
    records.push({ rolloutId: rollout.rollout_id, dataId, events });
    rewards.push(reward);
  }
  if (select.best_of_n) {
    const keep = bestOfN(records, rewards);
    records = keep.map((i) => records[i] as RolloutRecord);
    rewards = keep.map((i) => rewards[i] as number);
  }
  return { records, rewards, matched: matched.length };
}
