/**
 * @module A rollout's `format=triplet` events → its usable model calls, in order, its final reward and its per-call
 * rewards (under the reward policy, reward-policy.ts), and its spans. Error calls, calls whose ids were not captured
 * completely and malformed ones are skipped and counted; a call whose only capture problem is its logprobs is kept
 * without them (counted; the batch recomputes or drops them); a missing reward is filled and counted.
 */
import { z } from "zod";
import type { AgentFilter } from "../protocol/agent-match.js";
import { indexSpans, type SpanIndex } from "../protocol/agent-name.js";
import { SPAN_EVENT_TYPE, type SpanData } from "../protocol/span.js";
import type { TripletEvent, TripletToolCall } from "../protocol/triplet.js";
import { applyRewardPolicy, type RewardEvent, type RewardPolicy } from "./reward-policy.js";

/**
 * The fields of a triplet-format event (`GET /api/rollouts/{id}/events?format=triplet`) the trainer reads;
 * `event_id` (a name a reward may give a call) and `timestamp` (to place tool spans after calls) when known.
 */
export type TripletEventFields = Pick<TripletEvent, "event_type" | "data" | "sequence"> &
  Partial<Pick<TripletEvent, "event_id" | "timestamp">>;

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
  /** Ids a reward's `call_id` may name: event id, response `id`, the agent's request id; absent when none. */
  callIds?: string[];
  /** The span the call was made in, then its stored ancestors, nearest first; absent without a trace context. */
  spanIds?: string[];
  /** When the call was recorded (server clock, epoch seconds). */
  timestamp?: number;
  /** Why generation stopped (`stop`, `length`, …). */
  finishReason?: string;
  /** The response text (chat `content` or completions `text`). */
  responseText?: string;
  /** Tool calls the response makes, arguments unparsed. */
  toolCalls?: TripletToolCall[];
  /** Tools the request offered, by name. */
  toolNames?: string[];
}

/** A rollout reduced to what training needs. */
export interface RolloutTriplets {
  rolloutId: string;
  /** Group id: the rollouts of one input share it. */
  dataId: string;
  /** Usable model calls in event order. */
  calls: ModelCall[];
  /** The final reward under the reward policy (last event by default), or the fill value when there is none. */
  reward: number;
  /** True when no reward event gave a final reward and `reward` is the fill value. */
  rewardFilled: boolean;
  /** Reward of each call from events naming it (`reward_policy: per_call`), [calls]; zeros otherwise. */
  callRewards: number[];
  /** Valid reward events read. */
  rewardEvents: number;
  /** Reward events matched to a call (`per_call`). */
  attachedRewards: number;
  /** Reward events naming a call that is not among the usable calls (`per_call`; not used). */
  unmatchedRewards: number;
  /** Reward events set aside by the policy (earlier final rewards under `last` / `per_call`). */
  overriddenRewards: number;
  /** The rollout's stored spans (tool calls, agents, custom steps), in event order. */
  spans: SpanData[];
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
  agent_request_id: z.string().optional(),
  response_id: z.string().optional(),
  span_id: z.string().optional(),
  finish_reason: z.string().optional(),
  response_text: z.string().optional(),
  tool_calls: z.array(z.object({ name: z.string(), arguments: z.string() })).optional(),
  tool_names: z.array(z.string()).optional(),
});

const RewardDataSchema = z.looseObject({ value: z.number().refine(Number.isFinite), call_id: z.string().optional() });

type CallCounts = Pick<
  RolloutTriplets,
  "errorCalls" | "incompleteCalls" | "malformedEvents" | "missingLogprobCalls" | "dedupedCalls"
>;

/** True when every capture problem concerns logprobs only (`logprobs_*` reasons): the ids are sound. */
function onlyLogprobsIncomplete(reasons: unknown): boolean {
  return Array.isArray(reasons) && reasons.length > 0 && reasons.every((r) => String(r).startsWith("logprobs_"));
}

/** Reads one `model_request`, or counts why it is not usable and returns null. */
function readModelCall(
  event: TripletEventFields,
  turn: number,
  counts: CallCounts,
  spans: SpanIndex,
): ModelCall | null {
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
    ...creditFields(event, call, spans),
  };
}

/** The optional fields of a call that rewards and intermediate rules read, each present only when known. */
function creditFields(event: TripletEventFields, call: z.infer<typeof ModelCallDataSchema>, spans: SpanIndex) {
  const callIds = [event.event_id, call.response_id, call.agent_request_id].filter(
    (id): id is string => typeof id === "string" && id !== "",
  );
  const spanIds = call.span_id === undefined ? [] : spanChain(spans, call.span_id);
  return {
    ...(callIds.length > 0 ? { callIds } : {}),
    ...(spanIds.length > 0 ? { spanIds } : {}),
    ...(event.timestamp !== undefined ? { timestamp: event.timestamp } : {}),
    ...(call.finish_reason !== undefined ? { finishReason: call.finish_reason } : {}),
    ...(call.response_text !== undefined ? { responseText: call.response_text } : {}),
    ...(call.tool_calls !== undefined ? { toolCalls: call.tool_calls } : {}),
    ...(call.tool_names !== undefined ? { toolNames: call.tool_names } : {}),
  };
}

/** A span id and its stored ancestors, nearest first (bounded, so a malformed parent cycle cannot loop). */
function spanChain(spans: SpanIndex, spanId: string): string[] {
  const chain: string[] = [];
  let id: string | null | undefined = spanId;
  while (id && chain.length <= spans.size) {
    chain.push(id);
    id = spans.get(id)?.parent_span_id;
  }
  return chain;
}

/** What {@link extractTriplets} does beyond reading calls: which agents' calls to keep, how rewards combine. */
export interface ExtractOptions {
  /** Keep only the calls this filter passes (triplet `agent_name`); every call when absent. */
  agents?: AgentFilter;
  /** How several reward events combine; default `last`. */
  rewardPolicy?: RewardPolicy;
}

/**
 * Turns one rollout's triplet-format events into its usable model calls, its rewards and its spans.
 * @param rolloutId - the rollout the events belong to
 * @param dataId - the rollout's group id (`input.data_id`)
 * @param events - the rollout's events (latest attempt), any order; sorted here by `sequence`
 * @param rewardFillnaValue - final reward used when no reward event gives one under the policy
 * @param options - `agents`: keep only the calls the filter passes (calls naming no agent are dropped too; dropped
 *   calls are not counted anywhere and do not take a `turn`); `rewardPolicy` (default `last`), see reward-policy.ts
 * @returns the calls in event order (error, incomplete and malformed ones skipped and counted), the final reward and
 *   the per-call rewards, the reward counts and the spans
 * @see Agent Lightning v1.0, `GET /api/rollouts/{id}/events?format=triplet`; src/protocol/triplet.ts for the shapes
 */
export function extractTriplets(
  rolloutId: string,
  dataId: string,
  events: readonly TripletEventFields[],
  rewardFillnaValue: number,
  options: ExtractOptions = {},
): RolloutTriplets {
  const ordered = [...events].sort((a, b) => a.sequence - b.sequence);
  const spanIndex = indexSpans(ordered as readonly { event_type: string; data: Record<string, unknown> }[]);
  const counts: CallCounts = {
    errorCalls: 0,
    incompleteCalls: 0,
    malformedEvents: 0,
    missingLogprobCalls: 0,
    dedupedCalls: 0,
  };
  const calls: ModelCall[] = [];
  const rewards: RewardEvent[] = [];
  for (const event of ordered) {
    if (event.event_type === "model_request") {
      const data = event.data as Record<string, unknown>;
      const agentName = typeof data.agent_name === "string" ? data.agent_name : undefined;
      if (options.agents !== undefined && !options.agents(agentName)) continue;
      const call = readModelCall(event, calls.length, counts, spanIndex);
      if (call !== null) calls.push(call);
    } else if (event.event_type === "reward") {
      const parsed = RewardDataSchema.safeParse(event.data);
      if (!parsed.success) counts.malformedEvents += 1;
      else {
        const { value, call_id: callId } = parsed.data;
        rewards.push({ sequence: event.sequence, value, ...(callId !== undefined ? { callId } : {}) });
      }
    }
  }
  const policy = applyRewardPolicy(rewards, calls, options.rewardPolicy ?? "last");
  return {
    rolloutId,
    dataId,
    calls,
    reward: policy.final ?? rewardFillnaValue,
    rewardFilled: policy.final === null,
    callRewards: policy.callRewards,
    rewardEvents: rewards.length,
    attachedRewards: policy.attached,
    unmatchedRewards: policy.unmatched,
    overriddenRewards: policy.overridden,
    spans: ordered.filter((e) => e.event_type === SPAN_EVENT_TYPE).map((e) => e.data as unknown as SpanData),
    ...counts,
  };
}
