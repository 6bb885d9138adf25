/** @module The built-in tracer's current span across `await`s (`AsyncLocalStorage`) and its W3C `traceparent`. */
import { AsyncLocalStorage } from "node:async_hooks";
import type { FinishedSpan } from "./otlp-json.js";

/** What one root span collects: its finished spans (its own included), exported together when it ends. */
export interface TraceBatch {
  finished: FinishedSpan[];
  /** Set once the root span has ended and the batch was exported; later spans are exported on their own. */
  exported: boolean;
}

/** The span code is running inside. */
export interface ActiveSpan {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** Shared by every span under one root. */
  batch: TraceBatch;
}

/** The carrier of the current span; each `span()` call runs its function inside `storage.run`. */
export const spanStorage = new AsyncLocalStorage<ActiveSpan>();

/** @returns the span the calling code runs inside, or undefined outside every built-in span */
export function activeSpan(): ActiveSpan | undefined {
  return spanStorage.getStore();
}

/** `00-{trace_id}-{span_id}-01` of the current span, or undefined. @see https://www.w3.org/TR/trace-context/ */
export function activeTraceparent(): string | undefined {
  const active = spanStorage.getStore();
  return active ? `00-${active.traceId}-${active.spanId}-01` : undefined;
}
