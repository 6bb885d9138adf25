/**
 * @module The proxy pause shared by gateways on one database: a pause anywhere pauses all, and drain counts every
 * replica's calls. A gateway on a local store keeps its pause to itself.
 */

/** The shared pause record. `epoch` grows by one with every pause or resume, on any replica. */
export interface PauseRecord {
  paused: boolean;
  /** The `Retry-After` paused agents get, seconds. */
  retry_after_seconds: number;
  reason: string | null;
  /** When the pause ends unless renewed (epoch s); every replica watches it, so it ends even if the pauser is gone. */
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
   * Writes a pause or resume for every replica; with `ifEpoch`, only while the stored epoch still matches (an expiry
   * must not undo another replica's renewal). Null when it did not. @throws {StoreUnavailable}
   */
  set(next: Omit<PauseRecord, "epoch">, ifEpoch?: number): Promise<PauseRecord | null>;
  /**
   * Records in-flight calls and the applied epoch for the next heartbeat, or at once when `urgent`; never awaited,
   * a failed write is retried by the next heartbeat.
   */
  report(inflight: number, epoch: number, urgent: boolean): void;
  /** In-flight calls on other live replicas; one yet to apply `epoch` counts at least 1. @throws {StoreUnavailable} */
  othersInflight(epoch: number): Promise<number>;
  /** Stops reporting and removes this replica from the board. */
  close(): Promise<void>;
}
