/** @module Event wire types: append-only records per attempt, field names as Agent Lightning v1.0. */
import { z } from "zod";
import { wellFormedString } from "./text.js";

/** Event types the system itself writes or reads; any other non-empty type passes through untouched. */
export const WELL_KNOWN_EVENT_TYPES = ["model_request", "reward", "log"] as const;

/** Body of `POST /api/rollouts/{id}/attempt/{aid}/events` (one item). `event_id` makes the post idempotent. */
export const EventCreateSchema = z.strictObject({
  event_type: wellFormedString(1, 200),
  data: z.record(z.string(), z.unknown()).default(() => ({})),
  event_id: wellFormedString(1, 200).optional(),
});
/** An event to append, defaults applied. */
export type EventCreate = z.infer<typeof EventCreateSchema>;
/** An event to append, as a caller writes it. */
export type EventCreateInput = z.input<typeof EventCreateSchema>;

/** A stored event. `timestamp` is the server's clock in epoch seconds (float); `sequence` is gap-free per rollout from 1. */
export const EventSchema = z.strictObject({
  event_type: z.string(),
  rollout_id: z.string(),
  attempt_id: z.string(),
  timestamp: z.number(),
  data: z.record(z.string(), z.unknown()),
  sequence: z.number().int().min(1),
  event_id: z.string().nullable(),
  /** Present (true) only on an event that arrived after its rollout finished; AGL clients ignore it. */
  late: z.literal(true).optional(),
});
/** A stored event. */
export type Event = z.infer<typeof EventSchema>;

/** `data` of a `reward` event: `value` finite, null or absent (AGL v1.0 accepts a reward without a value). */
export const RewardDataSchema = z.looseObject({
  value: z.number().refine(Number.isFinite, "reward value must be a finite number").nullable().optional(),
  message: z.string().optional(),
  source: z.string().optional(),
  reason: z.string().optional(),
});
/** `data` of a `reward` event. */
export type RewardData = z.infer<typeof RewardDataSchema>;

/** Which server answered a model call, and the policy version of its weights. */
export const ServerInfoSchema = z.looseObject({
  model: z.string(),
  endpoint: z.string().optional(),
  version: z.number().int(),
});

/**
 * `data` of a `model_request` event: the body sent upstream and the full upstream JSON, token ids in vLLM's shape.
 * @see vLLM OpenAI-compatible server, `return_token_ids`
 */
export const ModelRequestDataSchema = z.looseObject({
  model: z.string(),
  model_version: z.number().int(),
  request: z.unknown(),
  response: z.unknown(),
  latency_ms: z.number().min(0),
  http_status: z.number().int(),
  status: z.enum(["ok", "error"]),
  retry_count: z.number().int().min(0),
  usage: z.unknown().optional(),
  finish_reason: z.string().nullable().optional(),
  server: ServerInfoSchema.optional(),
  capture_incomplete: z.boolean().optional(),
  /** Why capture is incomplete (`CaptureReason` codes of `gateway/proxy/record-call.ts`); set with `capture_incomplete`. */
  capture_incomplete_reasons: z.array(z.string()).optional(),
  /** The agent's own request id (body `request_id`, else its `x-request-id` header), when it sent one. */
  agent_request_id: z.string().optional(),
  /** The id the proxy gave the upstream try that answered (`x-request-id` and body `request_id`). */
  upstream_request_id: z.string().optional(),
  error: z.unknown().optional(),
  agent_name: z.string().optional(),
  trace_context: z.looseObject({ traceparent: z.string(), trace_id: z.string(), span_id: z.string() }).optional(),
});
/** `data` of a `model_request` event. */
export type ModelRequestData = z.infer<typeof ModelRequestDataSchema>;
