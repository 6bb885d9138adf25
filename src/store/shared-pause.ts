/**
 * @module The proxy pause state shared by several gateways on one database: a pause on any replica pauses all, and
 * drain counts the calls in flight on every replica. Implemented by `postgres-pause.ts`; a gateway with a local store
 * has none and keeps its pause to itself.
 */

/** The shared pause record. `epoch` grows by one with every pause or resume, on any replica. */
export interface PauseRecord {
  paused: boolean;
  /** The `Retry-After` paused agents get, seconds. */
  retry_after_seconds: number;
  reason: string | null;
  /**
   * When the pause ends by itself unless renewed (epoch seconds, the pausing gateway's clock); null: never. Every
   * replica watches it, so a lease ends even when the replica that took the pause is gone.
   */
  lease_expires_at: number | null;
  epoch: number;
}

/** One replica's view of the shared pause state. */
export interface SharedPause {
  /** @returns the latest record this replica knows (updated by notifications; synchronous) */
  current(): PauseRecord;
  /** Calls `listener` with every newer record, written by any replica (this one included). */
  onChange(listener: (record: PauseRecord) => void): void;
  /**
   * Writes a pause or resume for every replica.
   * @param next - the new state
   * @param ifEpoch - write only while the stored epoch is still this one (a lease expiry must not undo a renewal
   *   that another replica wrote meanwhile)
   * @returns the stored record with its new epoch, or null when `ifEpoch` no longer matched (nothing written)
   * @throws {StoreUnavailable} the database cannot be reached
   */
  set(next: Omit<PauseRecord, "epoch">, ifEpoch?: number): Promise<PauseRecord | null>;
  /**
   * Records this replica's calls in flight and the epoch it has applied, for the next heartbeat (about once a second),
   * or, when `urgent`, for a write as soon as the previous one is done. Never awaited: a failed write is retried by
   * the next heartbeat.
   * @param inflight - calls in flight on this replica
   * @param epoch - the newest epoch this replica applied: it admits no call against a pause of that epoch
   * @param urgent - write now (a pause was applied, or a call ended while paused: someone is waiting to drain)
   */
  report(inflight: number, epoch: number, urgent: boolean): void;
  /**
   * Calls in flight on the other live replicas, as they last reported them. A live replica that has not yet applied
   * `epoch` counts as at least 1, since it may still be admitting calls.
   * @throws {StoreUnavailable} the database cannot be reached
   */
  othersInflight(epoch: number): Promise<number>;
  /** Stops reporting and removes this replica from the board. */
  close(): Promise<void>;
}
