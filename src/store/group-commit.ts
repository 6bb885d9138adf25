/**
 * @module Group commit: writes queued in one event-loop turn share ONE transaction, each in its own savepoint, so one
 * commit serves many callers while a failing write fails only its own. A taken write lock is waited on by timer.
 */
import { performance } from "node:perf_hooks";

/** One queued write and the promise it settles. */
interface Job<TInput, TResult> {
  input: TInput;
  /** When it was queued (`performance.now()`, ms): a write waits for a busy lock at most `lockWaitMs` from here. */
  queuedAtMs: number;
  resolve(result: TResult): void;
  reject(error: unknown): void;
}

/** What {@link GroupCommit} needs from the database. */
export interface GroupCommitHooks<TInput, TResult> {
  /** Runs `fn` in the outer transaction and commits it; throws (having rolled back) when `fn` or the commit fails. */
  transaction(fn: () => void): void;
  /** Runs `fn` in a savepoint of the open transaction: on a throw only `fn`'s writes are rolled back, then rethrown. */
  savepoint<T>(fn: () => T): T;
  /** Whether a transaction is still open (SQLite may roll one back by itself, e.g. on a full disk). */
  inTransaction(): boolean;
  /** Performs one queued write inside the open transaction. */
  apply(input: TInput): TResult;
  /** False only for a write that checks everything before its single statement (SQLite undoes a failed statement). */
  needsSavepoint(input: TInput): boolean;
  /** Whether a commit failed only on another connection's write lock (SQLITE_BUSY): the batch is retried on a timer. */
  isBusy?(error: unknown): boolean;
  /** The error a write gets when it waited `waitedMs` for the lock without getting it (default: the busy error). */
  busyTimeout?(error: unknown, waitedMs: number): unknown;
}

/** Retry timing of a batch that found the write lock taken. */
export interface BusyRetry {
  /** Longest a queued write waits for the lock before it is rejected, ms. */
  lockWaitMs: number;
  /** First delay before trying again, ms; doubled per failed try up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
}

/** Default {@link BusyRetry}: 10 s in all, tries 2 ms apart at first, at most 100 ms apart. */
export const DEFAULT_BUSY_RETRY: BusyRetry = Object.freeze({ lockWaitMs: 10_000, baseDelayMs: 2, maxDelayMs: 100 });

/** Delay before retry `retry + 1` on a taken lock: exponential, capped, jittered so processes do not retry in step. */
export function busyRetryDelayMs(retry: number, timing: BusyRetry): number {
  const capMs = Math.min(timing.maxDelayMs, timing.baseDelayMs * 2 ** Math.min(retry, 20));
  return capMs / 2 + (Math.random() * capMs) / 2;
}

/**
 * Queues writes and commits them together on `setImmediate`. Guarantees:
 * 1. a caller's promise resolves only after its transaction committed;
 * 2. writes apply in queue order;
 * 3. a throwing write rolls back only its own writes and rejects only its own promise;
 * 4. a failed commit rejects every write of the batch, none stored;
 * 5. a commit failing on a taken lock keeps the batch and retries with growing delays, up to `lockWaitMs`.
 * A store calls {@link flush} before any other operation, so operations apply in call order.
 */
export class GroupCommit<TInput, TResult> {
  private pending: Job<TInput, TResult>[] = [];
  private scheduled = false;
  /** Consecutive flushes that found the lock taken. */
  private busyTries = 0;
  private readonly flushSoon = (): void => this.flush();

  constructor(
    private readonly hooks: GroupCommitHooks<TInput, TResult>,
    private readonly busyRetry: BusyRetry = DEFAULT_BUSY_RETRY,
  ) {}

  /** Writes queued and not yet committed (some may be waiting for the write lock). */
  get pendingCount(): number {
    return this.pending.length;
  }

  /** Queues one write; resolves once committed, rejects with its own error or the commit's. */
  enqueue(input: TInput): Promise<TResult> {
    return new Promise<TResult>((resolve, reject) => {
      this.pending.push({ input, queuedAtMs: performance.now(), resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(this.flushSoon);
      }
    });
  }

  /** Commits every queued write now (synchronously); a no-op when none is queued. */
  flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    const outcomes: ({ ok: true; result: TResult } | { ok: false; error: unknown })[] = [];
    try {
      this.hooks.transaction(() => {
        // A lone write needs no savepoint: if it throws, the outer transaction rolls back only its rows.
        if (batch.length === 1) outcomes.push({ ok: true, result: this.hooks.apply(batch[0]!.input) });
        else for (const job of batch) outcomes.push(this.applyShared(job.input));
      });
    } catch (error) {
      if (this.hooks.isBusy?.(error)) this.retryLater(batch, error);
      else for (const job of batch) job.reject(error);
      return;
    }
    this.busyTries = 0;
    batch.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) job.resolve(outcome.result);
      else job.reject(outcome.error);
    });
  }

  /** Puts a batch that found the lock taken back in front of the queue, rejecting writes that waited too long. */
  private retryLater(batch: Job<TInput, TResult>[], error: unknown): void {
    const now = performance.now();
    const kept: Job<TInput, TResult>[] = [];
    for (const job of batch) {
      const waitedMs = now - job.queuedAtMs;
      if (waitedMs < this.busyRetry.lockWaitMs) kept.push(job);
      else job.reject(this.hooks.busyTimeout ? this.hooks.busyTimeout(error, waitedMs) : error);
    }
    this.pending = [...kept, ...this.pending];
    if (this.pending.length === 0) return;
    this.scheduled = true;
    setTimeout(this.flushSoon, busyRetryDelayMs(this.busyTries++, this.busyRetry));
  }

  /** One write of a batch of several: its failure is caught and kept to itself. */
  private applyShared(input: TInput): { ok: true; result: TResult } | { ok: false; error: unknown } {
    // Had SQLite rolled the whole transaction back, a further write would autocommit on its own: stop the batch.
    if (!this.hooks.inTransaction()) throw new Error("group commit: the transaction was rolled back by SQLite");
    try {
      const { apply, savepoint } = this.hooks;
      const result = this.hooks.needsSavepoint(input) ? savepoint(() => apply(input)) : apply(input);
      return { ok: true, result };
    } catch (error) {
      if (!this.hooks.inTransaction()) throw error; // the whole batch fails: nothing of it is stored
      return { ok: false, error };
    }
  }
}
