/**
 * @module The rollouts of `arclight eval`: `samples` rollouts of each task (one group per task, validation mode),
 * launched through the gateway for the controller to run, waited for, and read back as one outcome per rollout.
 */

import type { GatewayClient } from "../gateway/client.js";
import { type GroupJudge, judgeGroup } from "../judge/apply.js";
import type { RolloutRecord } from "../trainer/batch.js";
import type { TrainerConfig } from "../trainer/config.js";
import type { DataItem } from "../trainer/data-order.js";
import { type GroupPlan, GroupTracker, groupCreates, planGroup } from "../trainer/rollout-groups.js";
import { extractTriplets } from "../trainer/triplets.js";

/** How one rollout of a task ended. */
export interface RolloutOutcome {
  rolloutId: string;
  /** The agent ran to the end (state `succeeded`); false for a crash, a timeout or a cancel. */
  completed: boolean;
  /** Whether the rollout's events gave a final reward (a completed one may post none). */
  rewarded: boolean;
  /** Final reward (`reward_policy`), `reward_fillna_value` when none was posted or the rollout failed. */
  reward: number;
}

/** One task's rollouts. */
export interface TaskOutcome {
  /** Index of the task's line in its data file, from 0. */
  dataIndex: number;
  rollouts: RolloutOutcome[];
  /** With a judge: rollouts it scored, and those it could not (each has a `judge` event saying why). */
  judge?: { judged: number; errors: number };
}

/** How to run the evaluation's rollouts. */
export interface EvalRolloutsOptions {
  /** Rollout id prefix, e.g. `eval`: rollout ids are `PREFIX-dINDEX-K`. */
  prefix: string;
  /** Rollouts per task. */
  samples: number;
  /** Trainer config: agent command or class, env_map, timeout, reward fill value and policy. */
  config: Readonly<TrainerConfig>;
  /** Policy version recorded in the rollouts' metadata. */
  policyVersion: number;
  /** Interval between gateway polls (ms); default 200. */
  pollMs?: number;
  /** Called after each poll with the number of terminal rollouts. */
  onProgress?: (done: number, total: number) => void;
  /** Aborting it makes the wait reject with the signal's reason. */
  signal?: AbortSignal;
  /** An LLM judge applied to each task's completed rollouts before their rewards are read; none: off. */
  judge?: GroupJudge;
}

/** Creates one group of `samples` rollouts per task, in task order. */
async function launchGroups(client: GatewayClient, items: readonly DataItem[], options: EvalRolloutsOptions) {
  const plans: GroupPlan[] = [];
  for (const item of items) {
    const fields = {
      dataIndex: item.index,
      input: item.input,
      isTrain: false,
      batchIdx: 0,
      launchVersion: options.policyVersion,
    };
    const plan = planGroup(`${options.prefix}-d${item.index}`, fields, options.samples);
    await client.createRollouts(groupCreates(plan, options.config));
    plans.push(plan);
  }
  return plans;
}

/** Polls until every rollout of every plan is terminal. */
async function waitForAll(tracker: GroupTracker, plans: readonly GroupPlan[], options: EvalRolloutsOptions) {
  const total = plans.length * options.samples;
  for (;;) {
    options.signal?.throwIfAborted();
    await tracker.poll();
    const done = plans.reduce(
      (sum, plan) => sum + plan.rolloutIds.filter((id) => tracker.state(id) !== null).length,
      0,
    );
    options.onProgress?.(done, total);
    if (done === total) return;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 200));
  }
}

/**
 * Runs `samples` rollouts of every task and waits for all of them.
 * @param client - gateway client (a controller watches the gateway and runs the agents)
 * @param items - the tasks
 * @param options - id prefix, samples per task, config, version, polling, progress, abort
 * @returns one outcome per task, in task order, its rollouts in id order
 * @throws whatever the gateway client throws; the signal's reason once it is aborted
 */
export async function runEvalRollouts(
  client: GatewayClient,
  items: readonly DataItem[],
  options: EvalRolloutsOptions,
): Promise<TaskOutcome[]> {
  options.signal?.throwIfAborted();
  const tracker = new GroupTracker(client);
  const plans = await launchGroups(client, items, options);
  await waitForAll(tracker, plans, options);
  const tasks: TaskOutcome[] = [];
  for (const plan of plans) tasks.push(await readTask(client, tracker, plan, options));
  return tasks;
}

/** One task's outcomes: its completed rollouts' events (judged first, with a judge) read into final rewards. */
async function readTask(
  client: GatewayClient,
  tracker: GroupTracker,
  plan: GroupPlan,
  options: EvalRolloutsOptions,
): Promise<TaskOutcome> {
  const { config } = options;
  let records: RolloutRecord[] = [];
  for (const rolloutId of plan.rolloutIds) {
    if (tracker.state(rolloutId) === "succeeded") {
      records.push({ rolloutId, dataId: plan.groupId, events: await client.getTripletEvents(rolloutId) });
    }
  }
  let judge: TaskOutcome["judge"];
  if (options.judge !== undefined) {
    const judged = await judgeGroup(client, options.judge, plan.input, records, config);
    records = judged.records;
    judge = { judged: judged.judged, errors: judged.errors };
  }
  const rollouts = plan.rolloutIds.map((rolloutId) => {
    const record = records.find((r) => r.rolloutId === rolloutId);
    const triplets = extractTriplets(rolloutId, plan.groupId, record?.events ?? [], config.reward_fillna_value, {
      rewardPolicy: config.reward_policy,
    });
    return { rolloutId, completed: record !== undefined, rewarded: !triplets.rewardFilled, reward: triplets.reward };
  });
  return { dataIndex: plan.dataIndex, rollouts, ...(judge !== undefined ? { judge } : {}) };
}
