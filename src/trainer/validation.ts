/**
 * @module Validation: one `is_train=false` rollout per validation input, run with the current policy, and the mean
 * of their final rewards (a failed rollout or one without a reward counts as `reward_fillna_value`).
 */
import type { GatewayClient } from "../gateway/client.js";
import type { TrainerConfig } from "./config.js";
import type { DataItem } from "./data-order.js";
import { launchGroup } from "./gateway-io.js";
import { type GroupPlan, type GroupTracker, planGroup } from "./rollout-groups.js";
import { extractTriplets, type TripletEvent } from "./triplets.js";

/** Where validation runs. */
export interface ValidationContext {
  config: Readonly<TrainerConfig>;
  /** Step just completed (names the rollouts: `NAME-vSTEP-dINDEX-0`). */
  step: number;
  policyVersion: number;
  /** Interval between gateway polls (ms). */
  pollMs: number;
  /** Aborting it makes the wait reject with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Runs one validation pass and waits for every rollout.
 * @param client - gateway client
 * @param tracker - the loop's tracker (validation rollouts are tracked, then forgotten)
 * @param valData - validation inputs
 * @param context - config, step, version, poll interval
 * @returns the mean final reward, or null without validation inputs
 */
export async function runValidation(
  client: GatewayClient,
  tracker: GroupTracker,
  valData: readonly DataItem[],
  context: ValidationContext,
): Promise<number | null> {
  if (valData.length === 0) return null;
  const { config, step, policyVersion } = context;
  const plans: GroupPlan[] = [];
  for (const item of valData) {
    const fields = {
      dataIndex: item.index,
      input: item.input,
      isTrain: false,
      batchIdx: step,
      launchVersion: policyVersion,
    };
    const plan = planGroup(`${config.name}-v${step}-d${item.index}`, fields, 1);
    await launchGroup(client, plan, config);
    plans.push(plan);
  }
  for (;;) {
    context.signal?.throwIfAborted();
    await tracker.poll();
    if (plans.every((plan) => tracker.isComplete(plan))) break;
    await new Promise((resolve) => setTimeout(resolve, context.pollMs));
  }
  let sum = 0;
  for (const plan of plans) {
    const rolloutId = plan.rolloutIds[0] as string;
    const failed = tracker.state(rolloutId) === "failed";
    const events = failed ? [] : ((await client.getEvents(rolloutId, { format: "triplet" })) as TripletEvent[]);
    sum += extractTriplets(rolloutId, plan.groupId, events, config.reward_fillna_value).reward;
    tracker.forget(plan);
  }
  return sum / plans.length;
}
