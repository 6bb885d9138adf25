/**
 * @module What the loop asks of the gateway, through `GatewayClient` only: endpoint registration with the policy
 * version, group creation, a finished group's triplet events, and the pause-and-drain around a weight update.
 */
import type { Logger } from "pino";
import type { GatewayClient } from "../gateway/client.js";
import type { ReasoningParserName, ToolParserName } from "../protocol/model.js";
import type { RolloutRecord } from "./batch.js";
import { type TrainerConfig, titoTokenizerOf } from "./config.js";
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

/** How the proxy serves the registered model (`proxy` of the trainer config); absent: passthrough, as AGL. */
export interface ProxyRegistration {
  mode: "passthrough" | "tito";
  /** tito: the tokenizer folder the gateway reads. */
  tokenizer: string | null;
  tool_parser: ToolParserName;
  reasoning_parser: ReasoningParserName;
}

/**
 * The registration fields of a trainer config's `proxy` section: none for `passthrough` (AGL's shape unchanged),
 * mode, tokenizer folder, tool and reasoning parsers for `tito`.
 * @param config - the trainer configuration
 */
export function proxyRegistrationOf(config: TrainerConfig): ProxyRegistration | undefined {
  if (config.proxy.mode === "passthrough") return undefined;
  const { tool_parser, reasoning_parser } = config.proxy;
  return { mode: "tito", tokenizer: titoTokenizerOf(config), tool_parser, reasoning_parser };
}

/**
 * Registers every serving endpoint under `modelName` with the trainer's policy version (upsert).
 * @param client - gateway client
 * @param modelName - the model name the proxy looks endpoints up by
 * @param endpoints - OpenAI base URLs
 * @param version - trainer policy version the endpoints now serve
 * @param proxy - how the proxy serves the model ({@link proxyRegistrationOf}); absent: passthrough
 * @throws {BadRequest} when the gateway refuses the registration (e.g. tito with an unreadable tokenizer folder)
 */
export async function registerEndpoints(
  client: GatewayClient,
  modelName: string,
  endpoints: readonly string[],
  version: number,
  proxy?: ProxyRegistration,
): Promise<void> {
  const fields =
    proxy === undefined
      ? {}
      : { mode: proxy.mode, tool_parser: proxy.tool_parser, reasoning_parser: proxy.reasoning_parser };
  const tokenizer = proxy?.tokenizer == null ? {} : { tokenizer: proxy.tokenizer };
  await client.upsertModels(
    endpoints.map((endpoint) => ({ model: modelName, endpoint, version, ...fields, ...tokenizer })),
  );
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

/** Oldest `server.version` among a rollout's model calls (the frozen model's left out), or null without calls. */
function oldestCallVersion(events: readonly TripletEventFields[], frozenModel: string | null): number | null {
  let oldest: number | null = null;
  for (const event of events) {
    if (event.event_type !== "model_request") continue;
    const server = (event.data as { server?: { model?: unknown; version?: unknown } }).server;
    // The frozen model stays at version 0 by design: its calls are not stale.
    if (frozenModel !== null && server?.model === frozenModel) continue;
    const version = server?.version;
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
    const oldest = oldestCallVersion(events, config.agents.frozen.length > 0 ? config.agents.frozen_model : null);
    if (oldest !== null && (group.oldestVersion === null || oldest < group.oldestVersion)) group.oldestVersion = oldest;
    group.records.push({ rolloutId, dataId: plan.groupId, events });
  }
  return group;
}

/** How the trainer pauses the proxy around a weight update. */
export interface PauseSettings {
  /** Retry-After told to agents (s). */
  retryAfterSeconds: number;
  /** Lease of the pause (s); renewed every third of it while the work runs. */
  leaseSeconds: number;
  /** Shown to agents and in `GET /proxy/state`. */
  reason: string;
  /** Interval between `GET /proxy/state` polls while draining (ms). */
  pollMs: number;
  /** Aborts the drain wait (the pause is still lifted). */
  signal?: AbortSignal;
}

/**
 * Pauses the gateway proxy (new calls get 429 + Retry-After) and waits until no call is in flight.
 * @param client - gateway client
 * @param settings - Retry-After, lease, reason, poll interval, abort signal
 * @returns seconds spent draining
 * @throws the signal's reason when it aborts while draining
 */
export async function pauseAndDrain(client: GatewayClient, settings: PauseSettings): Promise<number> {
  const started = performance.now();
  let state = await client.pauseProxy(pauseBody(settings));
  while (state.inflight > 0) {
    settings.signal?.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, settings.pollMs));
    state = await client.proxyState();
  }
  return (performance.now() - started) / 1000;
}

function pauseBody(settings: PauseSettings) {
  return {
    retry_after_seconds: settings.retryAfterSeconds,
    reason: settings.reason,
    lease_seconds: settings.leaseSeconds,
  };
}

/**
 * Runs `work` with the proxy paused and drained, and resumes the proxy on every way out (success, error, abort).
 * While `work` runs the pause lease is renewed every third of its length; if this process dies, the gateway lifts
 * the pause itself when the lease runs out.
 * @param client - gateway client
 * @param settings - see {@link PauseSettings}
 * @param log - where a failed renewal or resume is reported
 * @param work - the weight update; gets the seconds spent draining
 * @returns what `work` returns
 * @throws whatever pausing, draining or `work` throws (after the resume was attempted)
 */
export async function withPausedProxy<T>(
  client: GatewayClient,
  settings: PauseSettings,
  log: Logger,
  work: (drainS: number) => Promise<T>,
): Promise<T> {
  const renew = setInterval(
    () => {
      client.pauseProxy(pauseBody(settings)).catch((err: unknown) => log.warn({ err }, "proxy pause renewal failed"));
    },
    (settings.leaseSeconds * 1000) / 3,
  );
  try {
    return await work(await pauseAndDrain(client, settings));
  } finally {
    clearInterval(renew);
    try {
      await client.resumeProxy();
    } catch (err) {
      // A warning, not an error: the lease lifts the pause by itself, and a gateway stopped with the run (Ctrl-C
      // during a weight update) has no pause left to lift.
      log.warn({ err, leaseSeconds: settings.leaseSeconds }, "proxy resume failed; the pause lease will end it");
    }
  }
}
