/** @module Waiting between retries: `Retry-After` parsing, capped exponential backoff, abortable sleep. */

/**
 * Reads how long a server asked us to wait.
 * @param headers - response headers; `retry-after-ms` wins over `retry-after` (seconds or an HTTP date)
 * @returns the wait in ms (>= 0), or undefined when the server said nothing usable
 */
export function retryAfterMs(headers: Headers): number | undefined {
  const ms = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get("retry-after");
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * Exponential backoff with ±25 % jitter.
 * @param retry - 0 for the first retry
 * @param baseMs - first delay (ms)
 * @param maxMs - largest delay (ms)
 * @returns the delay in ms
 */
export function backoffMs(retry: number, baseMs = 200, maxMs = 5000): number {
  return Math.min(maxMs, baseMs * 2 ** retry) * (0.75 + Math.random() * 0.5);
}

/**
 * Sleeps `ms`, ending early when `signal` aborts.
 * @throws the signal's reason when it aborts
 */
export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
