/**
 * @module One rollout per input, outside the training groups: launch them through the gateway (the controller runs the
 * agents), wait until every one is terminal, read back their triplet events and final rewards. Validation, `arclight
 * eval` and the demo (demonstrations, before/after scores) all run their rollouts with it.
 */
import type { GatewayClient } from "../gateway/client.js";
import type { RolloutRecord } from "./batch.js";
import type { TrainerConfig } from "./config.js";
import type { DataItem } from "./data-order.js";
import { type GroupPlan, GroupTracker, groupCreates, groupRolloutId, planGroup } from "./rollout-groups.js";
import { extractTriplets, type TripletEventFields } from "./triplets.js";

/** How to run one batch of rollouts. */
export interface RolloutsOnceOptions {
  /** Rollout id prefix, unique per batch within the gateway, e.g. `demo-teacher`; ids are `PREFIX-dINDEX-0`. */
  prefix: string;
  /** `is_train` of the rollouts (the proxy's train or val mode and its sampling temperature). */
  isTrain: boolean;
  /** Trainer config: agent command and env_map, rollout timeout, reward fill value. */
  config: Readonly<TrainerConfig>;
  /** Policy version recorded in the rollouts' metadata. */
  policyVersion: number;
  /** `metadata.batch_idx` of the rollouts (validation: the step just completed); default 0. */
  batchIdx?: number;
  /** A tracker to poll (the training loop's); omitted: a fresh one. The rollouts are forgotten from it at the end. */
  tracker?: GroupTracker;
  /** Interval between gateway polls (ms); default 200. */
  pollMs?: number;
  /** Called after each poll with the number of terminal rollouts. */
  onProgress?: (done: number, total: number) => void;
  /** Aborting it makes the wait reject with the signal's reason. */
  signal?: AbortSignal;
  /** More metadata for every rollout, e.g. `{resources: {prompt: 3}}` to pin a resource version; default none. */
  metadata?: Readonly<Record<string, unknown>>;
}

/** What one batch produced, in input order. */
export interface RolloutsOnceResult {
  /** Every rollout's triplet events (empty for a failed one). */
  records: RolloutRecord[];
  /** Final reward of each rollout (`reward_fillna_value` for a failed one or one that posted none). */
  rewards: number[];
  /** Ids of the rollouts that ended `failed` (agent crash, timeout), input order. */
  failedIds: string[];
}

/**
 * The group id {@link runRolloutsOnce} gives input `dataIndex` (a group of one rollout): `PREFIX-dINDEX`.
 * @param prefix - the batch's id prefix
 * @param dataIndex - the input's index in its file
 */
function rolloutOnceGroupId(prefix: string, dataIndex: number): string {
  return `${prefix}-d${dataIndex}`;
}

/**
 * The rollout id {@link runRolloutsOnce} gives input `dataIndex`: `PREFIX-dINDEX-0`.
 * @param prefix - the batch's id prefix
 * @param dataIndex - the input's index in its file
 */
export function rolloutOnceId(prefix: string, dataIndex: number): string {
  return groupRolloutId(rolloutOnceGroupId(prefix, dataIndex), 0);
}

/** Launches one size-1 group per input. */
async function launchAll(
  client: GatewayClient,
  items: readonly DataItem[],
  options: RolloutsOnceOptions,
): Promise<GroupPlan[]> {
  const plans: GroupPlan[] = [];
  for (const item of items) {
    const fields = {
      dataIndex: item.index,
      input: item.input,
      isTrain: options.isTrain,
      batchIdx: options.batchIdx ?? 0,
      launchVersion: options.policyVersion,
    };
    const plan = planGroup(rolloutOnceGroupId(options.prefix, item.index), fields, 1);
    const creates = groupCreates(plan, options.config);
    await client.createRollouts(creates.map((c) => ({ ...c, metadata: { ...c.metadata, ...options.metadata } })));
    plans.push(plan);
  }
  return plans;
}

/** Polls until every plan is complete. */
async function waitAll(tracker: GroupTracker, plans: readonly GroupPlan[], options: RolloutsOnceOptions) {
  for (;;) {
    options.signal?.throwIfAborted();
    await tracker.poll();
    const done = plans.filter((plan) => tracker.isComplete(plan)).length;
    options.onProgress?.(done, plans.length);
    if (done === plans.length) return;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 200));
  }
}

/**
 * Runs one rollout per input and waits for all of them.
 * @param client - gateway client
 * @param items - inputs (each becomes one rollout, id {@link rolloutOnceId})
 * @param options - id prefix, train/val, config, version, tracker, polling, progress, abort
 * @returns records, rewards and failed ids, in input order
 * @throws whatever the gateway client throws; the signal's reason once it is aborted
 */
export async function runRolloutsOnce(
  client: GatewayClient,
  items: readonly DataItem[],
  options: RolloutsOnceOptions,
): Promise<RolloutsOnceResult> {
  options.signal?.throwIfAborted();
  const tracker = options.tracker ?? new GroupTracker(client);
  const plans = await launchAll(client, items, options);
  await waitAll(tracker, plans, options);
  const result: RolloutsOnceResult = { records: [], rewards: [], failedIds: [] };
  for (const plan of plans) {
    const rolloutId = plan.rolloutIds[0] as string;
    const failed = tracker.state(rolloutId) === "failed";
    const events = failed ? [] : await client.getTripletEvents(rolloutId);
    if (failed) result.failedIds.push(rolloutId);
    result.records.push({ rolloutId, dataId: plan.groupId, events });
    result.rewards.push(
      extractTriplets(rolloutId, plan.groupId, events, options.config.reward_fillna_value, {
        rewardPolicy: options.config.reward_policy,
      }).reward,
    );
    tracker.forget(plan);
  }
  return result;
}

/** A rollout's final reward from its triplet events. */
function rewardOf(rolloutId: string, dataId: string, events: readonly TripletEventFields[], fillValue: number): number {
  return extractTriplets(rolloutId, dataId, events, fillValue).reward;
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
    rewards.push(rewardOf(rolloutId, rolloutId, await client.getTripletEvents(rolloutId), fillValue));
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
 * @param solvedAt - reward counted as solved (default 1, a correct answer of the calculator's reward)
 * @returns mean, solved fraction and count; zeros for no rewards
 */
export function summariseRewards(rewards: readonly number[], solvedAt = 1): RewardSummary {
  if (rewards.length === 0) return { mean: 0, solved: 0, count: 0 };
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  return { mean, solved: rewards.filter((r) => r >= solvedAt).length / rewards.length, count: rewards.length };
}
