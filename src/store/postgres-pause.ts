/**
 * @module The shared proxy pause on PostgreSQL: `proxy_pause` (its trigger notifies `arclight_pause`) and
 * `gateway_replicas`, where each gateway reports in-flight calls and its applied epoch.
 */
import type pg from "pg";
import { asStoreError } from "./postgres-connection.js";
import type { PauseRecord, SharedPause } from "./shared-pause.js";

/** The channel of pause notifications (see migration 2). */
export const PAUSE_CHANNEL = "arclight_pause";

/** Options of {@link PgSharedPause}. */
export interface PgSharedPauseOptions {
  /** How often this replica re-writes its row (ms); default 1 000. */
  heartbeatMs?: number;
  /** A replica whose row is older than this is dead and not counted (ms); default 5 000. */
  liveMs?: number;
}

const RECORD_COLUMNS = "paused, retry_after_seconds, reason, lease_expires_at, epoch::integer AS epoch";

const UPSERT_REPLICA = `INSERT INTO gateway_replicas (replica_id, inflight, applied_epoch, heartbeat_at)
  VALUES ($1, $2, $3, now())
  ON CONFLICT (replica_id) DO UPDATE SET inflight = $2, applied_epoch = $3, heartbeat_at = now()`;

/** One gateway's handle on the shared pause state. */
export class PgSharedPause implements SharedPause {
  private record: PauseRecord = {
    paused: false,
    retry_after_seconds: 0,
    reason: null,
    lease_expires_at: null,
    epoch: 0,
  };
  private readonly listeners: ((record: PauseRecord) => void)[] = [];
  private reported = { inflight: 0, epoch: 0 };
  private writing: Promise<void> | null = null;
  private dirty = false;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly liveMs: number;
  private closed = false;

  /** Use {@link PostgresStore.sharedPause}, which also routes this replica's notifications here. */
  constructor(
    private readonly pool: pg.Pool,
    /** This gateway's id in `gateway_replicas` (its `application_name`). */
    readonly replicaId: string,
    options: PgSharedPauseOptions = {},
  ) {
    this.liveMs = options.liveMs ?? 5000;
    this.heartbeat = setInterval(() => this.flushReport(), options.heartbeatMs ?? 1000);
    this.heartbeat.unref();
  }

  /** Reads the stored record (at start and after the `LISTEN` connection came back: notifications may be lost). */
  async reload(): Promise<void> {
    const { rows } = await this.pool.query<PauseRecord>(`SELECT ${RECORD_COLUMNS} FROM proxy_pause`);
    if (rows[0]) this.apply(rows[0]);
  }

  /** A notification on {@link PAUSE_CHANNEL}: the new row as JSON. */
  onNotification(payload: string): void {
    const row = JSON.parse(payload) as PauseRecord;
    this.apply({
      paused: row.paused,
      retry_after_seconds: row.retry_after_seconds,
      reason: row.reason,
      lease_expires_at: row.lease_expires_at ?? null,
      epoch: row.epoch,
    });
  }

  private apply(record: PauseRecord): void {
    if (record.epoch <= this.record.epoch) return; // an older or already applied record
    this.record = Object.freeze({ ...record });
    for (const listener of this.listeners) listener(this.record);
  }

  current(): PauseRecord {
    return this.record;
  }

  onChange(listener: (record: PauseRecord) => void): void {
    this.listeners.push(listener);
  }

  async set(next: Omit<PauseRecord, "epoch">, ifEpoch?: number): Promise<PauseRecord | null> {
    try {
      const { rows } = await this.pool.query<PauseRecord>(
        `UPDATE proxy_pause SET paused = $1, retry_after_seconds = $2, reason = $3, lease_expires_at = $4,
           epoch = epoch + 1
         WHERE $5::bigint IS NULL OR epoch = $5
         RETURNING ${RECORD_COLUMNS}`,
        [next.paused, next.retry_after_seconds, next.reason, next.lease_expires_at, ifEpoch ?? null],
      );
      if (rows[0] === undefined) return null;
      this.apply(rows[0]);
      return rows[0];
    } catch (err) {
      throw asStoreError(err, "pause");
    }
  }

  report(inflight: number, epoch: number, urgent: boolean): void {
    this.reported = { inflight, epoch };
    if (!urgent) return;
    this.dirty = true;
    if (this.writing === null) this.flushReport();
  }

  /** Writes the latest report (and the heartbeat); one write at a time, the newest values win. */
  private flushReport(): void {
    if (this.writing !== null || this.closed) return;
    this.dirty = false;
    const { inflight, epoch } = this.reported;
    this.writing = this.pool
      .query(UPSERT_REPLICA, [this.replicaId, inflight, epoch])
      .then(
        () => undefined,
        () => undefined, // the next heartbeat retries; readers treat a silent replica as dead after liveMs
      )
      .finally(() => {
        this.writing = null;
        if (this.dirty) this.flushReport();
      });
  }

  async othersInflight(epoch: number): Promise<number> {
    try {
      const { rows } = await this.pool.query<{ n: number }>(
        `SELECT COALESCE(sum(CASE WHEN applied_epoch >= $2 THEN inflight ELSE greatest(inflight, 1) END), 0)::integer
           AS n FROM gateway_replicas
         WHERE replica_id <> $1 AND heartbeat_at > now() - make_interval(secs => $3)`,
        [this.replicaId, epoch, this.liveMs / 1000],
      );
      return rows[0]!.n;
    } catch (err) {
      throw asStoreError(err, "proxy state");
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    await this.writing;
    await this.pool
      .query("DELETE FROM gateway_replicas WHERE replica_id = $1", [this.replicaId])
      .catch(() => undefined);
  }
}
