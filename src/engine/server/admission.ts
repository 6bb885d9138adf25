/**
 * @module Admission of generation requests: `/pause` holds new requests until `/resume`, and a weight swap
 * (`/v1/load_weights`) waits for in-flight requests to finish while holding new ones, so every sequence is generated
 * by one policy version and the version reported at admission is the one that produced it.
 */

/** A waiting request: released on resume or after a swap. */
interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Pause state and in-flight count of one engine server. */
export class Admission {
  private paused = false;
  private swapping = false;
  private inFlight = 0;
  private waiters: Waiter[] = [];
  private drained: (() => void) | undefined;
  private swapChain: Promise<unknown> = Promise.resolve();

  /** True between `/pause` and `/resume`. */
  get isPaused(): boolean {
    return this.paused;
  }

  /** Requests admitted and not yet finished. */
  get inFlightCount(): number {
    return this.inFlight;
  }

  /**
   * Waits until the server is neither paused nor swapping weights, then counts the request in flight. Pair every
   * successful `enter` with one `leave`.
   * @param signal - aborts the wait (the client went away); the request is then not admitted
   * @throws the signal's reason when aborted while waiting
   */
  async enter(signal?: AbortSignal): Promise<void> {
    while (this.paused || this.swapping) {
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const waiter: Waiter = { resolve, reject };
        this.waiters.push(waiter);
        signal?.addEventListener(
          "abort",
          () => {
            this.waiters = this.waiters.filter((w) => w !== waiter);
            reject(signal.reason);
          },
          { once: true },
        );
      });
    }
    this.inFlight++;
  }

  /** Marks one admitted request finished. */
  leave(): void {
    this.inFlight--;
    if (this.inFlight === 0) this.drained?.();
  }

  /** Holds new requests; in-flight ones run to the end. */
  pause(): void {
    this.paused = true;
  }

  /** Releases held requests (unless a swap is running; they go when it ends). */
  resume(): void {
    this.paused = false;
    this.wake();
  }

  /**
   * Runs `swap` with no request in flight: holds new requests, waits for the in-flight ones, swaps, releases.
   * @returns what `swap` returns
   * @throws whatever `swap` throws (requests are released either way)
   */
  exclusive<T>(swap: () => Promise<T>): Promise<T> {
    // Swaps run one after another.
    const run = this.swapChain.then(() => this.runExclusive(swap));
    this.swapChain = run.catch(() => undefined);
    return run;
  }

  private async runExclusive<T>(swap: () => Promise<T>): Promise<T> {
    this.swapping = true;
    try {
      if (this.inFlight > 0) await new Promise<void>((resolve) => (this.drained = resolve));
      this.drained = undefined;
      return await swap();
    } finally {
      this.swapping = false;
      this.wake();
    }
  }

  private wake(): void {
    if (this.paused || this.swapping) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.resolve();
  }
}
