/**
 * @module Stores decoded spans as `span` events: each span goes to the rollout and attempt its attributes name
 * (span attributes first, then resource attributes), in request order. What cannot be stored is counted and
 * explained for the OTLP partial-success reply, never dropped silently.
 */
import {
  ArclightError,
  ATTEMPT_ID_ATTRIBUTE,
  currentAttemptOf,
  FIRST_ATTEMPT_ID,
  ROLLOUT_ID_ATTRIBUTE,
  SPAN_EVENT_TYPE,
  type SpanData,
} from "../../protocol/index.js";
import type { EventWrite, Store } from "../../store/store.js";

/** Why spans were not stored; the label of the `arclight_otlp_spans_total` counter. */
export type SpanRejectReason = "unattributed" | "rollout_not_found" | "stale_attempt" | "refused" | "forbidden";

/** The one attempt an agent token may write spans to; spans naming another rollout or attempt are rejected. */
export interface IngestScope {
  rolloutId: string;
  attemptId: string;
}

/** Outcome of one ingest. */
export interface IngestResult {
  accepted: number;
  /** Of the accepted, how many the store marked `late` (their rollout had finished). */
  late: number;
  /** Rejected span counts by reason (only reasons that occurred). */
  rejected: Partial<Record<SpanRejectReason, number>>;
  /** One line per rejected group, for `partial_success.error_message`. */
  messages: string[];
}

interface SpanGroup {
  rolloutId: string;
  /** Undefined: the rollout's current attempt. */
  attemptId: string | undefined;
  events: EventWrite[];
}

function stringAttribute(span: SpanData, name: string): string | undefined {
  const value = span.attributes[name] ?? span.resource[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

/**
 * The event of one span. Its `event_id` is `span:{trace_id}:{span_id}`, so an exporter's retry of a batch stores
 * nothing twice.
 */
function spanEvent(span: SpanData): EventWrite {
  return { event_type: SPAN_EVENT_TYPE, data: span, event_id: `span:${span.trace_id}:${span.span_id}` };
}

/** Splits spans by (rollout, attempt), keeping first-seen group order and request order inside each group. */
function groupSpans(spans: readonly SpanData[]): { groups: SpanGroup[]; unattributed: number } {
  const groups = new Map<string, SpanGroup>();
  let unattributed = 0;
  for (const span of spans) {
    const rolloutId = stringAttribute(span, ROLLOUT_ID_ATTRIBUTE);
    if (rolloutId === undefined) {
      unattributed++;
      continue;
    }
    const attemptId = stringAttribute(span, ATTEMPT_ID_ATTRIBUTE);
    const key = `${rolloutId}\u0000${attemptId ?? ""}`;
    let group = groups.get(key);
    if (!group) {
      group = { rolloutId, attemptId, events: [] };
      groups.set(key, group);
    }
    group.events.push(spanEvent(span));
  }
  return { groups: [...groups.values()], unattributed };
}

const REASONS: Record<string, SpanRejectReason> = {
  rollout_not_found: "rollout_not_found",
  stale_attempt: "stale_attempt",
};

/** Appends one group: how many were stored late, or the refusal the store explained (unknown rollout, superseded attempt). */
async function storeGroup(
  store: Store,
  group: SpanGroup,
): Promise<{ late: number } | { reason: SpanRejectReason; message: string }> {
  try {
    let attemptId = group.attemptId;
    if (attemptId === undefined) {
      const rollout = await store.getRollout(group.rolloutId);
      attemptId = rollout ? currentAttemptOf(rollout.status) : FIRST_ATTEMPT_ID;
    }
    const stored = await store.appendEvents(group.rolloutId, attemptId, group.events);
    return { late: stored.reduce((n, event) => n + (event.late ? 1 : 0), 0) };
  } catch (err) {
    if (!(err instanceof ArclightError) || err.status >= 500) throw err;
    return { reason: REASONS[err.code] ?? "refused", message: err.message };
  }
}

/** {@link storeGroup} for an agent token: only the token's own rollout and attempt. */
function storeScopedGroup(
  store: Store,
  group: SpanGroup,
  scope: IngestScope,
): Promise<{ late: number } | { reason: SpanRejectReason; message: string }> {
  const attemptId = group.attemptId ?? scope.attemptId;
  if (group.rolloutId !== scope.rolloutId || attemptId !== scope.attemptId) {
    const message = `an agent token of rollout ${scope.rolloutId} attempt ${scope.attemptId} may not write spans here`;
    return Promise.resolve({ reason: "forbidden", message });
  }
  return storeGroup(store, { ...group, attemptId });
}

/**
 * Stores spans, one store transaction per (rollout, attempt). Late writes follow the store's rules for any event:
 * spans of a finished rollout are stored `late`, and whatever `appendEvents` refuses for a group (a superseded
 * attempt, an unknown rollout) is rejected for all its spans.
 * @param store - where events go
 * @param spans - decoded spans, in request order
 * @param scope - set for an agent token: spans of other rollouts or attempts are rejected (`forbidden`), and spans
 *   naming no attempt go to the scope's attempt
 * @returns how many were stored (and of them late) and, by reason, how many were not
 * @throws whatever the store throws that is not an `ArclightError` below 500 (the request then fails with 500)
 */
export async function ingestSpans(
  store: Store,
  spans: readonly SpanData[],
  scope?: IngestScope,
): Promise<IngestResult> {
  const { groups, unattributed } = groupSpans(spans);
  const result: IngestResult = { accepted: 0, late: 0, rejected: {}, messages: [] };
  if (unattributed > 0) {
    result.rejected.unattributed = unattributed;
    result.messages.push(
      `${unattributed} span(s) name no rollout: set the resource attribute ${ROLLOUT_ID_ATTRIBUTE} ` +
        `(OTEL_RESOURCE_ATTRIBUTES=${ROLLOUT_ID_ATTRIBUTE}=...,${ATTEMPT_ID_ATTRIBUTE}=...)`,
    );
  }
  for (const group of groups) {
    const refusal = scope ? await storeScopedGroup(store, group, scope) : await storeGroup(store, group);
    if ("late" in refusal) {
      result.accepted += group.events.length;
      result.late += refusal.late;
      continue;
    }
    result.rejected[refusal.reason] = (result.rejected[refusal.reason] ?? 0) + group.events.length;
    result.messages.push(`${group.events.length} span(s) of rollout ${group.rolloutId}: ${refusal.message}`);
  }
  return result;
}
