/**
 * @module A rollout's `format=triplet` events → its usable model calls, in order, and its final reward. Error calls,
 * calls whose ids were not captured completely and malformed ones are skipped and counted; a call whose only capture
 * problem is its logprobs is kept without them (counted; the batch recomputes or drops them); a missing reward is
 * filled and counted.
 */
import { z } from "zod";
import type { TripletEvent } from "../protocol/triplet.js";

/** The fields of a triplet-format event (`GET /api/rollouts/{id}/events?format=triplet`) the trainer reads. */
export type TripletEventFields = Pick<TripletEvent, "event_type" | "data" | "sequence">;

/** One usable model call of a rollout. */
export interface ModelCall {
  /** Index of this call among the rollout's usable calls, from 0. */
  turn: number;
  /** The event's `sequence`, to find it among the rollout's events. */
  sequence: number;
  /** [promptLen] */
  promptTokenIds: number[];
  /** Generated ids, stop id included, [respLen]. */
  responseTokenIds: number[];
  /** Sampling-time logprob (nats) of each response token, [respLen]; null when not recorded. */
  logprobs: number[] | null;
  /** Policy version of the weights that answered (`server.version`). */
  policyVersion: number;
  /** The agent that made the call (triplet `agent_name`); absent when nothing names one. */
  agentName?: string;
}

/** A rollout reduced to what training needs. */
export interface RolloutTriplets {
  rolloutId: string;
  /** Group id: the rollouts of one input share it. */
  dataId: string;
  /** Usable model calls in event order. */
  calls: ModelCall[];
  /** The last reward event's value, or the fill value when there is none. */
  reward: number;
  /** True when no reward event was found and `reward` is the fill value. */
  rewardFilled: boolean;
  /** Model calls skipped because `status` was `error`. */
  errorCalls: number;
  /** Model calls skipped because `capture_incomplete` was set for a reason other than logprobs. */
  incompleteCalls: number;
  /** Model calls kept without logprobs: missing, non-finite or misaligned at capture, or not recorded at all. */
  missingLogprobCalls: number;
  /** Earlier events of retried calls the triplet view left out (Σ `deduped_retries`). */
  dedupedCalls: number;
  /** Model calls and rewards skipped because their data did not have the triplet shape. */
  malformedEvents: number;
}

/** True for an array of non-negative integers; one plain loop, as prompts run to many thousands of ids per call. */
function isTokenIds(value: unknown): value is number[] {
  if (!Array.isArray(value)) return false;
  for (const id of value) if (!Number.isInteger(id) || id < 0) return false;
  return true;
}

const TokenIdsSchema = z.custom<number[]>(isTokenIds, "expected an array of non-negative integer token ids");

/** The part of a triplet `model_request` this module needs; other fields pass. */
const ModelCallDataSchema = z.looseObject({
  prompt_token_ids: TokenIdsSchema,
  response_token_ids: TokenIdsSchema,
  response_log_probs: z.array(z.number()).nullable().optional(),
  server: z.looseObject({ version: z.number().int().nullable() }),
  status: z.enum(["ok", "error"]).optional(),
  capture_incomplete: z.boolean().optional(),
  agent_name: z.string().optional(),
  capture_incomplete_reasons: z.array(z.string()).optional(),
  deduped_retries: z.number().int().min(0).optional(),
});

const RewardDataSchema = z.looseObject({ value: z.number().refine(Number.isFinite) });

type CallCounts = Pick<
  RolloutTriplets,
  "errorCalls" | "incompleteCalls" | "malformedEvents" | "missingLogprobCalls" | "dedupedCalls"
>;

/** True when every capture problem concerns logprobs only (`logprobs_*` reasons): the ids are sound. */
function onlyLogprobsIncomplete(reasons: unknown): boolean {
  return Array.isArray(reasons) && reasons.length > 0 && reasons.every((r) => String(r).startsWith("logprobs_"));
}

/** Reads one `model_request`, or counts why it is not usable and returns null. */
function readModelCall(event: TripletEventFields, turn: number, counts: CallCounts): ModelCall | null {
  const data = event.data as Record<string, unknown>;
  if (typeof data.deduped_retries === "number") counts.dedupedCalls += data.deduped_retries;
  if (data.status === "error") {
    counts.errorCalls += 1;
    return null;
  }
  const logprobsOnly = data.capture_incomplete === true && onlyLogprobsIncomplete(data.capture_incomplete_reasons);
  if (data.capture_incomplete === true && !logprobsOnly) {
    counts.incompleteCalls += 1;
    return null;
  }
  const parsed = ModelCallDataSchema.safeParse(data);
  if (!parsed.success) {
    counts.malformedEvents += 1;
    return null;
  }
  const call = parsed.data;
  let logprobs = logprobsOnly ? null : (call.response_log_probs ?? null);
  // Logprobs that do not line up with the response ids cannot be attributed to tokens: treat them as unknown.
  if (logprobs !== null && logprobs.length !== call.response_token_ids.length) logprobs = null;
  if (logprobs === null && call.response_token_ids.length > 0) counts.missingLogprobCalls += 1;
  return {
    turn,
    sequence: event.sequence,
    promptTokenIds: call.prompt_token_ids,
    responseTokenIds: call.response_token_ids,
    logprobs,
    // A call recorded without a version (posted by hand, not by the proxy) counts as version 0, as it always has.
    policyVersion: call.server.version ?? 0,
    ...(call.agent_name !== undefined ? { agentName: call.agent_name } : {}),
  };
}

/** Whether a call passes the agent filter: no filter keeps every call; a filter keeps only calls of named agents. */
function keepsAgent(agents: ReadonlySet<string> | undefined, data: Record<string, unknown>): boolean {
  return agents === undefined || (typeof data.agent_name === "string" && agents.has(data.agent_name));
}

/**
 * Turns one rollout's triplet-format events into its usable model calls and final reward.
 * @param rolloutId - the rollout the events belong to
 * @param dataId - the rollout's group id (`input.data_id`)
 * @param events - the rollout's events (latest attempt), any order; sorted here by `sequence`
 * @param rewardFillnaValue - reward used when the rollout posted no valid reward event
 * @param agents - keep only the calls of these agents (triplet `agent_name`; calls naming no agent are dropped too);
 *   every call when absent. Dropped calls are not counted anywhere and do not take a `turn`.
 * @returns the calls in event order (error, incomplete and malformed ones skipped and counted) and the last reward
 * @see Agent Lightning v1.0, `GET /api/rollouts/{id}/events?format=triplet`; src/protocol/triplet.ts for the shapes
 */
export function extractTriplets(
  rolloutId: string,
  dataId: string,
  events: readonly TripletEventFields[],
  rewardFillnaValue: number,
  agents?: ReadonlySet<string>,
): RolloutTriplets {
  const ordered = [...events].sort((a, b) => a.sequence - b.sequence);
  const counts: CallCounts = {
    errorCalls: 0,
    incompleteCalls: 0,
    malformedEvents: 0,
    missingLogprobCalls: 0,
    dedupedCalls: 0,
  };
  const calls: ModelCall[] = [];
  let reward: number | null = null;
  for (const event of ordered) {
    if (event.event_type === "model_request") {
      if (!keepsAgent(agents, event.data as Record<string, unknown>)) continue;
      const call = readModelCall(event, calls.length, counts);
      if (call !== null) calls.push(call);
    } else if (event.event_type === "reward") {
      const parsed = RewardDataSchema.safeParse(event.data);
      if (parsed.success) reward = parsed.data.value;
      else counts.malformedEvents += 1;
    }
  }
  return {
    rolloutId,
    dataId,
    calls,
    reward: reward ?? rewardFillnaValue,
    rewardFilled: reward === null,
    ...counts,
  };
}
