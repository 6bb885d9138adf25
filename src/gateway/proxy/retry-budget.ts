/**
 * @module A retry budget per upstream endpoint, so that retries cannot multiply the load on a struggling server:
 * within a sliding window, retries to an endpoint may not exceed `minRetries` plus `ratio` × the first tries sent to
 * it. With the defaults (10 + 0.2 × requests per 10 s), 40 agents whose calls all fail with 429 make at most
 * 40 + 18 = 58 upstream requests instead of 40 × 6 = 240.
 * @see Finagle `RetryBudget` and Envoy's `retry_budget` (the same rule: a ratio of requests plus a floor)
 */

/** How much retrying one endpoint may take. */
export interface RetryBudgetOptions {
  /** Retries allowed per window beyond the floor, as a fraction of first tries in the window. */
  ratio: number;
  /** Retries always allowed per window (so a quiet endpoint still gets retried). */
  minRetries: number;
  /** Length of the sliding window, ms. */
  windowMs: number;
}

/** Counts per window slot (a tenth of the window). */
interface Slot {
  startMs: number;
  requests: number;
  retries: number;
}

const SLOTS = 10;

/** Per-endpoint counts of first tries and retries over a sliding window. */
export class RetryBudget {
  private readonly byEndpoint = new Map<string, Slot[]>();

  /** @param options - ratio, floor and window */
  constructor(private readonly options: RetryBudgetOptions) {}

  /** Counts a first try to `endpoint`. */
  recordRequest(endpoint: string, nowMs = Date.now()): void {
    this.slot(endpoint, nowMs).requests++;
  }

  /**
   * Takes one retry from `endpoint`'s budget when there is one left.
   * @returns true when the retry may be sent (and is counted), false when the budget is spent
   */
  tryRetry(endpoint: string, nowMs = Date.now()): boolean {
    const slots = this.live(endpoint, nowMs);
    let requests = 0;
    let retries = 0;
    for (const slot of slots) {
      requests += slot.requests;
      retries += slot.retries;
    }
    if (retries >= this.options.minRetries + this.options.ratio * requests) return false;
    this.slot(endpoint, nowMs).retries++;
    return true;
  }

  /** The slots of `endpoint` still inside the window (older ones dropped). */
  private live(endpoint: string, nowMs: number): Slot[] {
    const slots = (this.byEndpoint.get(endpoint) ?? []).filter((s) => s.startMs > nowMs - this.options.windowMs);
    this.byEndpoint.set(endpoint, slots);
    return slots;
  }

  /** The current slot of `endpoint`, created when the last one is older than a tenth of the window. */
  private slot(endpoint: string, nowMs: number): Slot {
    const slots = this.live(endpoint, nowMs);
    const last = slots.at(-1);
    if (last && nowMs - last.startMs < this.options.windowMs / SLOTS) return last;
    const slot = { startMs: nowMs, requests: 0, retries: 0 };
    slots.push(slot);
    return slot;
  }
}

/**
 * Parses a `Retry-After` header: delay-seconds or an HTTP-date.
 * @param value - the header's value (undici gives a string, or an array when repeated)
 * @param nowMs - the current time, ms since the epoch
 * @returns the delay in ms (0 for a date in the past), or null when absent or unparsable
 * @see RFC 9110 §10.2.3
 */
export function parseRetryAfterMs(value: string | string[] | undefined, nowMs = Date.now()): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const dateMs = Date.parse(text);
  return Number.isNaN(dateMs) ? null : Math.max(0, dateMs - nowMs);
}
