/** @module Posting events from an agent; each post carries a fresh `event_id`, so retries store it once. */
import { randomUUID } from "node:crypto";
import { type AgentEnv, fromEnv } from "./env.js";
import { backoffMs, retryAfterMs, sleep } from "./retry.js";
import { activeSpan } from "./span-context.js";

/** The gateway refused an event (4xx other than 429), or kept failing after every retry. */
export class EmitFailed extends Error {
  /** HTTP status of the last answer; undefined after transport errors. */
  readonly status: number | undefined;
  constructor(message: string, status: number | undefined, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "EmitFailed";
    this.status = status;
  }
}

/** An event as the gateway stored it. */
export interface StoredEvent {
  event_type: string;
  rollout_id: string;
  attempt_id: string;
  timestamp: number;
  data: Record<string, unknown>;
  sequence: number;
  event_id: string | null;
}

/** Options shared by {@link emitEvent} and {@link emitReward}. */
export interface EmitOptions {
  /** Rollout context; default {@link fromEnv}(). */
  env?: AgentEnv;
  /** Retries after the first try; default 8. */
  retries?: number;
}

/**
 * Posts one event of this attempt and returns it stored.
 * @throws {NotInRollout} outside a rollout
 * @throws {EmitFailed} on a 4xx (e.g. 409 for a superseded attempt) or when retries run out
 */
export async function emitEvent(
  eventType: string,
  data: Record<string, unknown> = {},
  options: EmitOptions = {},
): Promise<StoredEvent> {
  const env = options.env ?? fromEnv();
  const retries = options.retries ?? 8;
  const body = JSON.stringify({ event_type: eventType, data, event_id: randomUUID() });
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (env.apiKey !== "") headers.authorization = `Bearer ${env.apiKey}`;
  let lastError: EmitFailed | undefined;
  for (let retry = 0; retry <= retries; retry++) {
    if (retry > 0) await sleep(backoffMs(retry - 1));
    let response: Response;
    try {
      response = await fetch(env.eventUrl, { method: "POST", headers, body });
    } catch (cause) {
      lastError = new EmitFailed(`posting ${eventType} event failed: ${(cause as Error).message}`, undefined, {
        cause,
      });
      continue;
    }
    if (response.ok) return (await response.json()) as StoredEvent;
    const text = await response.text();
    lastError = new EmitFailed(
      `gateway answered ${response.status} to a ${eventType} event: ${detailOf(text)}`,
      response.status,
    );
    if (response.status === 429) {
      await sleep(Math.min(60_000, retryAfterMs(response.headers) ?? 0));
      continue;
    }
    if (response.status < 500) throw lastError;
  }
  throw lastError ?? new EmitFailed(`posting ${eventType} event failed`, undefined);
}

/**
 * Posts this attempt's reward; inside a built-in tracer span it names that span.
 * @param options.callId - the call an intermediate reward is for, stored as `call_id`
 * @throws {RangeError} when `value` is not finite; `NotInRollout`; `EmitFailed`
 */
export function emitReward(
  value: number,
  options: EmitOptions & { source?: string; reason?: string; callId?: string } = {},
): Promise<StoredEvent> {
  if (typeof value !== "number" || !Number.isFinite(value))
    throw new RangeError(`reward must be a finite number, got ${value}`);
  const data: Record<string, unknown> = { value };
  if (options.source !== undefined) data.source = options.source;
  if (options.reason !== undefined) data.reason = options.reason;
  if (options.callId !== undefined) data.call_id = options.callId;
  const active = activeSpan();
  if (active) Object.assign(data, { trace_id: active.traceId, span_id: active.spanId });
  return emitEvent("reward", data, options);
}

function detailOf(text: string): string {
  try {
    const detail = (JSON.parse(text) as { detail?: unknown }).detail;
    return typeof detail === "string" ? detail : JSON.stringify(detail);
  } catch {
    return text.slice(0, 500);
  }
}
