/**
 * @module Group commit of event appends on PostgreSQL: appends queued while a batch is on the wire go together as ONE
 * statement (`arclight_append_events`), checked server-side under row locks.
 */
import type pg from "pg";
import { type Event, RolloutNotFound, StaleAttempt } from "../protocol/index.js";
import { withConflictRetry } from "./postgres-connection.js";
import { eventFromPgRow, type PgEventRow } from "./postgres-rows.js";
import { nowSeconds } from "./rollout-rules.js";
import type { EventWrite } from "./store.js";

/** One queued append, its events already serialised. */
interface Job {
  rolloutId: string;
  attemptId: string;
  events: readonly EventWrite[];
  dataJson: string[];
  resolve(events: Event[]): void;
  reject(error: unknown): void;
}

/** One job's answer from `arclight_append_events`. */
type JobResult =
  | { error: "not_found" }
  | { error: "stale"; current: string | null }
  | { ok: ({ sequence: number } | PgEventRow)[]; late: boolean };

/**
 * Sends queued appends in batches, one on the wire at a time. Jobs apply in order and resolve after commit; a job the
 * rules reject fails alone; a failed statement fails the batch, and a connection lost during commit may have stored
 * it (retrying with `event_id`s is safe).
 */
export class PgAppendBatcher {
  private pending: Job[] = [];
  /** Settles when the batch on the wire has settled. */
  private inFlight: Promise<void> | null = null;

  constructor(private readonly pool: pg.Pool) {}

  /** Queues one append. @throws {TypeError} at once when `data` cannot be serialised */
  enqueue(rolloutId: string, attemptId: string, events: readonly EventWrite[]): Promise<Event[]> {
    const dataJson = events.map((e) => e.dataJson ?? JSON.stringify(e.data));
    return new Promise<Event[]>((resolve, reject) => {
      this.pending.push({ rolloutId, attemptId, events, dataJson, resolve, reject });
      if (this.inFlight === null) this.inFlight = this.sendLoop();
    });
  }

  /** @returns a promise that settles once every append queued so far has settled */
  async settled(): Promise<void> {
    while (this.inFlight !== null) await this.inFlight;
  }

  /** Sends batches until the queue is empty; the first waits one turn so that appends of this turn join it. */
  private async sendLoop(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      await this.send(batch);
    }
    this.inFlight = null;
  }

  private async send(batch: Job[]): Promise<void> {
    const now = nowSeconds();
    const payload = batch.map((job) => ({
      r: job.rolloutId,
      a: job.attemptId,
      t: now,
      e: job.events.map((e, i) => ({ type: e.event_type, id: e.event_id ?? null, data: job.dataJson[i] })),
    }));
    let results: JobResult[];
    try {
      const { rows } = await withConflictRetry("appendEvents", () =>
        this.pool.query<{ r: JobResult[] }>("SELECT arclight_append_events($1::jsonb) AS r", [JSON.stringify(payload)]),
      );
      results = rows[0]!.r;
    } catch (err) {
      for (const job of batch) job.reject(err);
      return;
    }
    for (const [i, job] of batch.entries()) settle(job, results[i]!, now);
  }
}

/** Resolves or rejects one job from its result. */
function settle(job: Job, result: JobResult, timestamp: number): void {
  if ("ok" in result) {
    job.resolve(
      result.ok.map((stored, i): Event => {
        if ("event_type" in stored) return eventFromPgRow(stored); // a replayed event_id: the stored event
        const create = job.events[i]!;
        return {
          event_type: create.event_type,
          rollout_id: job.rolloutId,
          attempt_id: job.attemptId,
          timestamp,
          data: create.data,
          sequence: stored.sequence,
          event_id: create.event_id ?? null,
          ...(result.late ? { late: true as const } : {}),
        };
      }),
    );
  } else if (result.error === "not_found") job.reject(new RolloutNotFound(job.rolloutId));
  else job.reject(new StaleAttempt(job.rolloutId, job.attemptId, result.current));
}
