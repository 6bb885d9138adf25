/**
 * @module The trimmed "triplet" view of events (`GET /api/rollouts/{id}/events?format=triplet`, Agent Lightning v1.0):
 * a `model_request` becomes its token ids and logprobs, a `reward` its value. The trainer reads rollouts in this shape.
 */

/** `data` of a `model_request` event in triplet format. Token ids are exactly those the model saw and produced. */
export interface TripletModelRequest {
  /** Prompt token ids as the server tokenised them, [promptLen]. */
  prompt_token_ids: number[];
  /** Generated token ids (stop id included), [respLen]. */
  response_token_ids: number[];
  /** Logprob (nats) of each response token under the sampling policy, [respLen]; null when missing or non-finite. */
  response_log_probs: number[] | null;
  /** Which weights produced the response. */
  server: { model: string; version: number };
  /** Upstream HTTP status, when recorded. */
  http_status?: number;
  /** `error` when the call failed (such rows are skipped by the trainer). */
  status?: "ok" | "error";
  /** Upstream error body, when the call failed. */
  error?: unknown;
  /** True when the proxy could not capture ids/logprobs consistently (e.g. a stream missing `token_ids`). */
  capture_incomplete?: boolean;
}

/** `data` of a `reward` event in triplet format. */
export interface TripletReward {
  value: number;
  source?: string;
  reason?: string;
}
