/**
 * @module Group commit: writes queued in the same event-loop turn run in ONE outer transaction, each in its own
 * savepoint, so one commit (one WAL append) serves many callers while a failing write fails only its own caller.
 */

/** One queued write and the promise it settles. */
interface Job<TInput, TResult> {
  input: TInput;
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
  /**
   * Whether a failure of `apply(input)` could leave part of its writes behind. False only for a write that checks
   * everything before issuing a single statement: SQLite undoes a failed statement by itself, so no savepoint is needed.
   */
  needsSavepoint(input: TInput): boolean;
}

/**
 * Queues writes and commits them together on `setImmediate`, i.e. after every I/O callback of the current event-loop
 * turn has had the chance to queue its own. Guarantees:
 * 1. a caller's promise resolves only after the transaction holding its rows has committed;
 * 2. writes apply in the order they were queued (a later write sees an earlier one's rows);
 * 3. a write that throws rolls back its own writes (its savepoint, or its one failed statement) and rejects its own
 *    promise; its neighbours still commit;
 * 4. if the commit itself fails, every write of the batch is rejected and none is stored.
 *
 * {@link flush} commits the queue at once; a store calls it before any other operation so that it sees operations in
 * the order they were called.
 */
export class GroupCommit<TInput, TResult> {
  private pending: Job<TInput, TResult>[] = [];
  private scheduled = false;
  private readonly flushSoon = (): void => this.flush();

  constructor(private readonly hooks: GroupCommitHooks<TInput, TResult>) {}

  /**
   * Queues one write.
   * @returns the write's result, once committed; rejects with the write's own error or the commit's
   */
  enqueue(input: TInput): Promise<TResult> {
    return new Promise<TResult>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
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
      for (const job of batch) job.reject(error);
      return;
    }
    batch.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) job.resolve(outcome.result);
      else job.reject(outcome.error);
    });
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
