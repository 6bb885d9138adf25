/**
 * @module Records one proxied call as its `model_request` event, durably before the agent is answered: a call whose
 * event cannot be committed is never answered as a success (the caller turns the thrown error into a 503 with
 * `Retry-After`, or an SSE error event in place of `[DONE]`). The event's JSON splices in the request and response
 * texts the proxy already holds instead of serialising them again.
 */

import type { ModelRequestData } from "../../protocol/index.js";
import { ArclightError, StoreUnavailable } from "../../protocol/index.js";
import type { Store } from "../../store/store.js";
import { buildModelRequestData, type CallRecord } from "./capture.js";
import type { TrackedCall } from "./proxy-call.js";

/** Seconds an agent is told to wait (`Retry-After`) when its call's event could not be stored. */
export const STORE_RETRY_AFTER_SECONDS = 1;

/**
 * Appends the call's `model_request` event (its JSON text reusing the request and response texts already held) and
 * resolves once it is committed.
 * @param store - where the event goes
 * @param call - the call, its ids and identity
 * @param record - what happened
 * @param known - texts already held for the request and response
 * @param extra - fields added to the event data (the `tito` record of a token-in-token-out call)
 * @throws {ArclightError} a 4xx the store raised about the rollout (e.g. `StaleAttempt`: the attempt was superseded
 *   meanwhile), unchanged
 * @throws {StoreUnavailable} anything else (database locked past its wait, disk full, connection lost), with
 *   `retry_after_seconds`: the event is not stored, so the agent must not take the answer as recorded
 */
export async function recordCall(
  store: Store,
  call: TrackedCall,
  record: CallRecord,
  known: KnownJson,
  extra: Record<string, unknown> = {},
): Promise<void> {
  try {
    const data = Object.assign(buildModelRequestData(record), call.identity, call.requestIds, extra);
    const dataJson = modelRequestDataJson(data, known);
    await store.appendEvents(call.rolloutId, call.attemptId, [{ event_type: "model_request", data, dataJson }]);
  } catch (err) {
    call.log.error({ err, rolloutId: call.rolloutId, attemptId: call.attemptId }, "model_request event not recorded");
    throw storeFailure(err);
  }
}

/**
 * The error the agent gets for an event that could not be stored: a 4xx about the rollout as it is, anything else as
 * a retryable 503.
 * @param err - what the store threw
 */
export function storeFailure(err: unknown): ArclightError {
  if (err instanceof ArclightError && err.status < 500) return err;
  const reason = err instanceof Error ? err.message : String(err);
  const advised = err instanceof StoreUnavailable ? err.fields.retry_after_seconds : undefined;
  return new StoreUnavailable(`The call was answered upstream but could not be recorded (${reason}); retry it`, {
    cause: err,
    retryAfterSeconds: typeof advised === "number" ? advised : STORE_RETRY_AFTER_SECONDS,
  });
}

/** Texts the proxy already has, each with the object it is the JSON of. */
export interface KnownJson {
  /** The body sent upstream, and its text (the agent's text with the proxy's fields spliced in). */
  request: unknown;
  requestText: string;
  /** The parsed upstream body, and the text it was parsed from; absent for a stream (assembled, no text). */
  response?: unknown;
  responseText?: string;
}

/**
 * Serialises `data` like `JSON.stringify(data)`: the same value and key order. `data.request` / `data.response` are
 * taken from `known` as text when they are the very objects `known` names (a response changed by the capture check,
 * e.g. misaligned logprobs nulled, is a new object and is serialised).
 * @param data - event data built by `buildModelRequestData`
 * @param known - texts already held for the request and response
 * @returns the JSON text of `data`
 */
export function modelRequestDataJson(data: ModelRequestData, known: KnownJson): string {
  const { request, response } = data;
  if (request === undefined || response === undefined) return JSON.stringify(data);
  let json = "{";
  let position = 0;
  // One pass over the keys in order, each written as JSON.stringify would (an undefined value is left out).
  for (const key in data) {
    const value = (data as unknown as Record<string, unknown>)[key];
    // Anything but the key order buildModelRequestData writes falls back to the plain path (so the two texts are
    // never first: the comma before them is always due).
    if (position < 4 && key !== LEADING_KEYS[position]) return JSON.stringify(data);
    if (key === "request")
      json += `,"request":${request === known.request ? known.requestText : JSON.stringify(request)}`;
    else if (key === "response") json += `,"response":${responseJson(response, known)}`;
    else {
      const valueJson = JSON.stringify(value);
      if (valueJson !== undefined) json += `${json.length === 1 ? "" : ","}${JSON.stringify(key)}:${valueJson}`;
    }
    position++;
  }
  return `${json}}`;
}

/** The keys `buildModelRequestData` writes first, in its order. */
const LEADING_KEYS = ["model", "model_version", "request", "response"] as const;

/** The response's JSON: the upstream's own text when `response` is the very object parsed from it. */
function responseJson(response: unknown, known: KnownJson): string {
  return known.responseText !== undefined && response === known.response
    ? known.responseText
    : JSON.stringify(response);
}
