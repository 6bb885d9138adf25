/** @module Polling for test harnesses: wait until a probe returns a value, with a deadline. */

/**
 * Polls `probe` until it returns a value other than undefined.
 * @param what - what is awaited, for the timeout's message
 * @param probe - returns the value, or undefined while it is not there yet
 * @param timeoutMs - how long to wait before failing
 * @param intervalMs - the pause between probes
 * @returns the first value `probe` returned
 * @throws {Error} `timed out waiting for WHAT` after `timeoutMs`
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  intervalMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
