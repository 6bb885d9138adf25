/**
 * @module Test fixture: rollouts with recorded model calls written straight into a store, in the proxy's
 * `model_request` shape (vLLM chat response with `prompt_token_ids`, `token_ids` and `logprobs.content`).
 */
import type { Store } from "../../store/store.js";

/** One recorded call: prompt ids, response ids with their text and logprob. */
export interface FixtureCall {
  promptIds: number[];
  responseIds: number[];
  /** Text of each response token, [respLen]. */
  texts: string[];
  /** Logprob (nats) of each response token, [respLen]. */
  logprobs: number[];
  policyVersion?: number;
  latencyMs?: number;
}

/** The `data` of a `model_request` event for a call. */
export function modelRequestData(call: FixtureCall): Record<string, unknown> {
  const version = call.policyVersion ?? 0;
  return {
    model: "policy",
    model_version: version,
    request: { model: "policy", messages: [{ role: "user", content: "fixture" }] },
    response: {
      prompt_token_ids: call.promptIds,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: call.texts.join("") },
          finish_reason: "stop",
          token_ids: call.responseIds,
          logprobs: { content: call.responseIds.map((_, i) => ({ token: call.texts[i], logprob: call.logprobs[i] })) },
        },
      ],
    },
    latency_ms: call.latencyMs ?? 12,
    http_status: 200,
    status: "ok",
    retry_count: 0,
    finish_reason: "stop",
    server: { model: "policy", version },
  };
}

/**
 * Creates a succeeded rollout holding the given calls and a final reward.
 * @param store - where to write
 * @param rolloutId - id of the new rollout
 * @param calls - its model calls, in order
 * @param reward - the reward event's value
 */
export async function seedTraceRollout(
  store: Store,
  rolloutId: string,
  calls: readonly FixtureCall[],
  reward: number,
): Promise<void> {
  await store.createRollouts([
    {
      rollout_id: rolloutId,
      input: { data_id: "fixture" },
      is_train: true,
      config: { timeout_seconds: 60, max_attempts: 1, local: null, k8s: null },
      metadata: { batch_idx: null, sample_idx_in_batch: null },
    },
  ]);
  await store.patchRollout(rolloutId, { status: { state: "running" } });
  await store.appendEvents(rolloutId, "0", [
    ...calls.map((call) => ({ event_type: "model_request", data: modelRequestData(call) })),
    { event_type: "reward", data: { value: reward } },
  ]);
  await store.patchRollout(rolloutId, { status: { state: "succeeded" } });
}

/**
 * Two calls whose second prompt departs from the first call's prompt ⧺ response at position 4 (the row has id 11,
 * "llo"; the prompt has id 99): the trainer cannot merge them, and reports a `token_differs` mismatch there.
 */
export const MISMATCH_CALLS: readonly FixtureCall[] = [
  { promptIds: [1, 2, 3], responseIds: [10, 11], texts: ["He", "llo"], logprobs: [-0.25, -1.5] },
  { promptIds: [1, 2, 3, 10, 99, 5], responseIds: [12, 13], texts: [" wor", "ld"], logprobs: [-0.05, -3.2] },
];
