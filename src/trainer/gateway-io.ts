/**
 * @module What the loop asks of the gateway, through `GatewayClient` only: endpoint registration with the policy
 * version, group creation, a finished group's triplet events, and the pause-and-drain around a weight update.
 */
import type { GatewayClient } from "../gateway/client.js";
import type { RolloutRecord } from "./batch.js";
import type { TrainerConfig } from "./config.js";
import type { ReadMark } from "./late-rewards.js";
import { type GroupPlan, type GroupTracker, groupCreates } from "./rollout-groups.js";
import type { TripletEventFields } from "./triplets.js";

/** A complete group as read back from the gateway. */
export interface FinishedGroup {
  plan: GroupPlan;
  /** Rollouts kept for training (failed ones dropped or reward-stripped per `failed_rollouts`), `rolloutIds` order. */
  records: RolloutRecord[];
  /** Rollouts of the group that failed. */
  failed: number;
  /** Failed rollouts left out of the group. */
  failedDropped: number;
  /** Oldest policy version among the group's model calls; null when it made none. */
  oldestVersion: number | null;
  /** How far each read rollout was read: a reward stored after its mark was not trained. */
  marks: ReadMark[];
}

/**
 * Registers every serving endpoint under `modelName` with the trainer's policy version (upsert).
 * @param client - gateway client
 * @param modelName - the model name the proxy looks endpoints up by
 * @param endpoints - OpenAI base URLs
 * @param version - trainer policy version the endpoints now serve
 */
export async function registerEndpoints(
  client: GatewayClient,
  modelName: string,
  endpoints: readonly string[],
  version: number,
): Promise<void> {
  await client.upsertModels(endpoints.map((endpoint) => ({ model: modelName, endpoint, version })));
}

/**
 * Creates a group's rollouts (idempotent: ids are pre-assigned); a {@link GroupTracker} then sees them finish.
 * @param client - gateway client
 * @param plan - the group
 * @param config - trainer config
 */
export async function launchGroup(client: GatewayClient, plan: GroupPlan, config: TrainerConfig): Promise<void> {
  await client.createRollouts(groupCreates(plan, config));
}

/** Oldest `server.version` among a rollout's model calls, or null without calls. */
function oldestCallVersion(events: readonly TripletEventFields[]): number | null {
  let oldest: number | null = null;
  for (const event of events) {
    if (event.event_type !== "model_request") continue;
    const version = (event.data as { server?: { version?: unknown } }).server?.version;
    if (typeof version === "number" && (oldest === null || version < oldest)) oldest = version;
  }
  return oldest;
}

/**
 * Reads a complete group's triplet events. A failed rollout is dropped (`failed_rollouts: drop`) or kept with its
 * reward events removed, so it trains with `reward_fillna_value` (`fillna`); the rest of the group is unaffected.
 * @param client - gateway client
 * @param tracker - knows each rollout's terminal state
 * @param plan - a complete group
 * @param config - trainer config
 * @returns the group's records and counts
 */
export async function readFinishedGroup(
  client: GatewayClient,
  tracker: GroupTracker,
  plan: GroupPlan,
  config: TrainerConfig,
): Promise<FinishedGroup> {
  const group: FinishedGroup = { plan, records: [], failed: 0, failedDropped: 0, oldestVersion: null, marks: [] };
  for (const rolloutId of plan.rolloutIds) {
    const failed = tracker.state(rolloutId) === "failed";
    if (failed) group.failed += 1;
    if (failed && config.failed_rollouts === "drop") {
      group.failedDropped += 1;
      continue;
    }
    const all = await client.getTripletEvents(rolloutId);
    group.marks.push({ rolloutId, readUpTo: all.reduce((top, e) => Math.max(top, e.sequence), 0) });
    const events = failed ? all.filter((e) => e.event_type !== "reward") : all;
    const oldest = oldestCallVersion(events);
    if (oldest !== null && (group.oldestVersion === null || oldest < group.oldestVersion)) group.oldestVersion = oldest;
    group.records.push({ rolloutId, dataId: plan.groupId, events });
  }
  return group;
}

/**
 * Pauses the gateway proxy (new calls get 429 + Retry-After) and waits until no call is in flight.
 * @param client - gateway client
 * @param retryAfterSeconds - Retry-After told to agents (s)
 * @param reason - shown to agents and in `GET /proxy/state`
 * @param pollMs - interval between `GET /proxy/state` polls (ms)
 * @returns seconds spent draining
 */
export async function pauseAndDrain(
  client: GatewayClient,
  retryAfterSeconds: number,
  reason: string,
  pollMs: number,
): Promise<number> {
  const started = performance.now();
  let state = await client.pauseProxy({ retry_after_seconds: retryAfterSeconds, reason });
  while (state.inflight > 0) {
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    state = await client.proxyState();
  }
  return (performance.now() - started) / 1000;
}
