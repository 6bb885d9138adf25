/**
 * @module What the trace viewer shows of one attempt, built from its raw events with the trainer's own code: each
 * model call's prompt and response tokens (text from the recorded logprobs, logprob per response token), rewards,
 * spans, and the training rows the trainer would build, with each merge break at its first differing token
 * (`toTripletEvents` → `extractTriplets` → `aggregateTrajectories`, exactly as the trainer reads a rollout).
 */
import type { Event } from "../../src/protocol/event.js";
import { toTripletEvents } from "../../src/protocol/triplet.js";
import type { MergeMismatch } from "../../src/trainer/aggregate-result.js";
import { aggregateTrajectories } from "../../src/trainer/aggregate-trajectory.js";
import type { TrainingRow } from "../../src/trainer/training-row.js";
import { extractTriplets } from "../../src/trainer/triplets.js";

/** One model call of the attempt. */
export interface TraceCall {
  sequence: number;
  /** The model name the call was made with (token texts are decoded through its server). */
  model: string;
  /** Usable-call index the trainer gives it; null when the trainer skips the call (error, incomplete, malformed). */
  turn: number | null;
  status: string;
  httpStatus: number | null;
  latencyMs: number | null;
  policyVersion: number | null;
  finishReason: string | null;
  agentName: string | null;
  error: unknown;
  captureIncomplete: boolean;
  promptIds: number[];
  responseIds: number[];
  /** Logprob (nats) of each response token, [respLen]; null where not recorded. */
  logprobs: (number | null)[];
}

/** A reward event, and the call it follows. */
export interface TraceReward {
  sequence: number;
  value: number;
  source: string | null;
  reason: string | null;
  /** Sequence of the last model call before it; null when it comes first. */
  afterCall: number | null;
}

/** A merge break: call `turn`'s prompt departs from the row so far at `position`. */
export interface TraceMismatch extends MergeMismatch {
  /** Sequence of the call that started a new row. */
  callSequence: number;
  /** The row's token at `position` (undefined past its end). */
  expected: number | undefined;
  /** The prompt's token at `position` (undefined when the prompt ended there). */
  got: number | undefined;
}

/** A span, placed in its tree. */
export interface TraceSpan {
  spanId: string;
  parentId: string | null;
  name: string;
  depth: number;
  startMs: number;
  durationMs: number;
  status: string;
  agentName: string | null;
}

/** Everything the trace viewer shows. */
export interface TraceModel {
  calls: TraceCall[];
  rewards: TraceReward[];
  rows: TrainingRow[];
  mismatches: TraceMismatch[];
  spans: TraceSpan[];
  /** Events that are neither calls, rewards nor spans (logs, custom). */
  others: Event[];
  /** Token id → text, from the response tokens' recorded strings. */
  tokenText: Map<number, string>;
  /** The reward the trainer would use (the last reward event), null when none. */
  finalReward: number | null;
}

const NO_LIMITS = { maxPromptLength: Number.MAX_SAFE_INTEGER, maxResponseLength: Number.MAX_SAFE_INTEGER };

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function numberOr<T>(value: unknown, fallback: T): number | T {
  return typeof value === "number" ? value : fallback;
}

/** Response token strings and logprobs of a vLLM choice (chat `logprobs.content`, or completions `logprobs`). */
function choiceTokens(choice: Record<string, unknown> | undefined): { texts: unknown[]; logprobs: unknown[] } {
  const logprobs = record(choice?.logprobs);
  if (Array.isArray(logprobs?.content)) {
    const content = logprobs.content.map((entry) => record(entry) ?? {});
    return { texts: content.map((e) => e.token), logprobs: content.map((e) => e.logprob) };
  }
  const tokens = Array.isArray(logprobs?.tokens) ? logprobs.tokens : [];
  return { texts: tokens, logprobs: Array.isArray(logprobs?.token_logprobs) ? logprobs.token_logprobs : [] };
}

/** One call's view from its raw `model_request` data; token texts go into `tokenText`. */
function readCall(event: Event, tokenText: Map<number, string>): TraceCall {
  const data = event.data;
  const response = record(data.response);
  const choice = record(Array.isArray(response?.choices) ? response.choices[0] : undefined);
  const responseIds = Array.isArray(choice?.token_ids) ? (choice.token_ids as number[]) : [];
  const promptIds = (response?.prompt_token_ids ?? choice?.prompt_token_ids ?? []) as number[];
  const { texts, logprobs } = choiceTokens(choice);
  responseIds.forEach((id, i) => {
    const text = texts[i];
    if (typeof text === "string" && !tokenText.has(id)) tokenText.set(id, text);
  });
  const server = record(data.server);
  return {
    sequence: event.sequence,
    model: typeof data.model === "string" ? data.model : "",
    turn: null,
    status: typeof data.status === "string" ? data.status : "ok",
    httpStatus: numberOr(data.http_status, null),
    latencyMs: numberOr(data.latency_ms, null),
    policyVersion: numberOr(server?.version ?? data.model_version, null),
    finishReason: typeof data.finish_reason === "string" ? data.finish_reason : null,
    agentName: typeof data.agent_name === "string" ? data.agent_name : null,
    error: data.error,
    captureIncomplete: data.capture_incomplete === true,
    promptIds: Array.isArray(promptIds) ? promptIds : [],
    responseIds,
    logprobs: responseIds.map((_, i) => numberOr(logprobs[i], null)),
  };
}

/** Spans as a depth-first tree, children by start time. */
function spanTree(events: readonly Event[]): TraceSpan[] {
  const spans = events.map((event) => {
    const d = event.data;
    const attributes = record(d.attributes) ?? {};
    const start = Number(d.start_time_unix_nano ?? 0) / 1e6;
    return {
      spanId: String(d.span_id ?? event.sequence),
      parentId: typeof d.parent_span_id === "string" ? d.parent_span_id : null,
      name: String(d.name ?? "span"),
      depth: 0,
      startMs: start,
      durationMs: Number(d.end_time_unix_nano ?? 0) / 1e6 - start,
      status: String(record(d.status)?.code ?? "unset"),
      agentName: typeof attributes["gen_ai.agent.name"] === "string" ? attributes["gen_ai.agent.name"] : null,
    };
  });
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map<string | null, TraceSpan[]>();
  for (const span of spans) {
    const parent = span.parentId !== null && ids.has(span.parentId) ? span.parentId : null;
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const out: TraceSpan[] = [];
  const walk = (parent: string | null, depth: number) => {
    for (const span of (children.get(parent) ?? []).sort((a, b) => a.startMs - b.startMs)) {
      out.push({ ...span, depth });
      walk(span.spanId, depth + 1);
    }
  };
  walk(null, 0);
  return out;
}

/**
 * Token ids whose text is not known yet, by model name (what the page asks `/api/dashboard/detokenize` for).
 * @returns model → distinct ids without text, in first-seen order
 */
export function idsWithoutText(trace: TraceModel): Map<string, number[]> {
  const out = new Map<string, Set<number>>();
  for (const call of trace.calls) {
    const ids = out.get(call.model) ?? new Set<number>();
    for (const id of [...call.promptIds, ...call.responseIds]) if (!trace.tokenText.has(id)) ids.add(id);
    out.set(call.model, ids);
  }
  return new Map([...out].filter(([, ids]) => ids.size > 0).map(([model, ids]) => [model, [...ids]]));
}

/**
 * Builds the trace viewer's model of one attempt.
 * @param rolloutId - the rollout
 * @param dataId - its group id (`input.data_id`)
 * @param events - the attempt's raw events, any order
 * @returns calls, rewards, spans, other events, and the trainer's rows and merge mismatches (trajectory level)
 */
export function buildTrace(rolloutId: string, dataId: string, events: readonly Event[]): TraceModel {
  const ordered = [...events].sort((a, b) => a.sequence - b.sequence);
  const tokenText = new Map<number, string>();
  const calls: TraceCall[] = [];
  const rewards: TraceReward[] = [];
  const others: Event[] = [];
  for (const event of ordered) {
    if (event.event_type === "model_request") calls.push(readCall(event, tokenText));
    else if (event.event_type === "reward") {
      rewards.push({
        sequence: event.sequence,
        value: Number(event.data.value),
        source: typeof event.data.source === "string" ? event.data.source : null,
        reason: typeof event.data.reason === "string" ? event.data.reason : null,
        afterCall: calls.at(-1)?.sequence ?? null,
      });
    } else if (event.event_type !== "span") others.push(event);
  }
  // The trainer receives these over HTTP as JSON (`?format=triplet`); here they are the same values in memory.
  const tripletEvents = toTripletEvents(ordered) as unknown as Event[];
  const triplets = extractTriplets(rolloutId, dataId, tripletEvents, 0);
  for (const usable of triplets.calls) {
    const call = calls.find((c) => c.sequence === usable.sequence);
    if (call) call.turn = usable.turn;
  }
  const { rows, mismatches } = aggregateTrajectories(triplets, NO_LIMITS);
  return {
    calls,
    rewards,
    rows,
    mismatches: mismatches.map((m) => explainMismatch(m, rows, triplets.calls)),
    spans: spanTree(ordered.filter((e) => e.event_type === "span")),
    others,
    tokenText,
    finalReward: triplets.rewardFilled ? null : triplets.reward,
  };
}

/** Adds the two tokens that differ: the row's (the row holding turn − 1) and the new prompt's. */
function explainMismatch(
  mismatch: MergeMismatch,
  rows: readonly TrainingRow[],
  usable: readonly { turn: number; sequence: number; promptTokenIds: number[] }[],
): TraceMismatch {
  const call = usable.find((c) => c.turn === mismatch.turn);
  const row = rows.find((r) => r.turns.includes(mismatch.turn - 1));
  const rowTokens = row ? [...row.promptTokenIds, ...row.responseTokenIds] : [];
  return {
    ...mismatch,
    callSequence: call?.sequence ?? -1,
    expected: rowTokens[mismatch.position],
    got: call?.promptTokenIds[mismatch.position],
  };
}
