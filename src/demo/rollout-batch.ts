/**
 * @module One rollout per input, outside the training loop: launch them through the gateway (the controller runs
 * the agents), wait until every one is terminal, read back their triplet events and final rewards. The demo records
 * demonstrations and evaluates policies with it; `arclight eval` too.
 */
import type { GatewayClient } from "../gateway/client.js";
import type { RolloutRecord } from "../trainer/batch.js";
import type { TrainerConfig } from "../trainer/config.js";
import type { DataItem } from "../trainer/data-order.js";
import { launchGroup } from "../trainer/gateway-io.js";
import { type GroupPlan, GroupTracker, planGroup } from "../trainer/rollout-groups.js";
import { extractTriplets, type TripletEvent } from "../trainer/triplets.js";

/** How to run one batch of rollouts. */
export interface RolloutBatchOptions {
  /** Rollout id prefix, unique per batch within the gateway, e.g. `demo-teacher`; ids are `PREFIX-dINDEX-0`. */
  prefix: string;
  /** `is_train` of the rollouts (the proxy's train or val mode and its sampling temperature). */
  isTrain: boolean;
  /** Trainer config: agent command and env_map, rollout timeout, reward fill value. */
  config: Readonly<TrainerConfig>;
  /** Policy version recorded in the rollouts' metadata. */
  policyVersion: number;
  /** Interval between gateway polls (ms); default 200. */
  pollMs?: number;
  /** Called after each poll with the number of terminal rollouts. */
  onProgress?: (done: number, total: number) => void;
  /** Aborting it makes the wait reject with the signal's reason. */
  signal?: AbortSignal;
}

/** What one batch produced, in input order. */
export interface RolloutBatchResult {
  /** Every rollout's triplet events (empty for a failed one). */
  records: RolloutRecord[];
  /** Final reward of each rollout (`reward_fillna_value` for a failed one or one that posted none). */
  rewards: number[];
  /** Rollouts that ended `failed` (agent crash, timeout). */
  failed: number;
  /** Their ids, input order. */
  failedIds: string[];
}

/**
 * Runs one rollout per input and waits for all of them.
 * @param client - gateway client
 * @param items - inputs (each becomes one rollout)
 * @param options - id prefix, train/val, config, version, polling
 * @returns records, rewards and the failure count, in input order
 * @throws whatever the gateway client throws
 */
export async function runRolloutBatch(
  client: GatewayClient,
  items: readonly DataItem[],
  options: RolloutBatchOptions,
): Promise<RolloutBatchResult> {
  const { config } = options;
  const tracker = new GroupTracker(client);
  const plans: GroupPlan[] = [];
  for (const item of items) {
    const fields = {
      dataIndex: item.index,
      input: item.input,
      isTrain: options.isTrain,
      batchIdx: 0,
      launchVersion: options.policyVersion,
    };
    const plan = planGroup(`${options.prefix}-d${item.index}`, fields, 1);
    await launchGroup(client, plan, config);
    plans.push(plan);
  }
  for (;;) {
    options.signal?.throwIfAborted();
    await tracker.poll();
    const done = plans.filter((plan) => tracker.isComplete(plan)).length;
    options.onProgress?.(done, plans.length);
    if (done === plans.length) break;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 200));
  }
  const result: RolloutBatchResult = { records: [], rewards: [], failed: 0, failedIds: [] };
  for (const plan of plans) {
    const rolloutId = plan.rolloutIds[0] as string;
    const failed = tracker.state(rolloutId) === "failed";
    const events = failed ? [] : ((await client.getEvents(rolloutId, { format: "triplet" })) as TripletEvent[]);
    if (failed) {
      result.failed += 1;
      result.failedIds.push(rolloutId);
    }
    result.records.push({ rolloutId, dataId: plan.groupId, events });
    result.rewards.push(extractTriplets(rolloutId, plan.groupId, events, config.reward_fillna_value).reward);
  }
  return result;
}

/**
 * Final rewards of finished rollouts, read from their triplet events.
 * @param client - gateway client
 * @param rolloutIds - terminal rollouts
 * @param fillValue - reward of a rollout that posted none
 * @returns one reward per id, same order
 * @throws {RolloutNotFound} for an unknown id
 */
export async function readRewards(
  client: GatewayClient,
  rolloutIds: readonly string[],
  fillValue: number,
): Promise<number[]> {
  const rewards: number[] = [];
  for (const rolloutId of rolloutIds) {
    const events = (await client.getEvents(rolloutId, { format: "triplet" })) as TripletEvent[];
    rewards.push(extractTriplets(rolloutId, rolloutId, events, fillValue).reward);
  }
  return rewards;
}

/** Mean reward and the share of rollouts that reached `solvedAt`. */
export interface RewardSummary {
  mean: number;
  /** Fraction of rewards >= solvedAt. */
  solved: number;
  count: number;
}

/**
 * Summarises rewards.
 * @param rewards - final rewards
 * @param solvedAt - reward counted as solved (the calculator's correct answer is 1)
 * @returns mean, solved fraction and count; zeros for no rewards
 */
export function summariseRewards(rewards: readonly number[], solvedAt = 1): RewardSummary {
  if (rewards.length === 0) return { mean: 0, solved: 0, count: 0 };
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  return { mean, solved: rewards.filter((r) => r >= solvedAt).length / rewards.length, count: rewards.length };
}
