/**
 * @module SQLite `Store`, the default: WAL, every multi-row write in one `BEGIN IMMEDIATE` transaction so processes
 * may share a file; appends are group-committed (`group-commit.ts`).
 */
import { accessSync, constants, statSync } from "node:fs";
import { dirname } from "node:path";
import { performance } from "node:perf_hooks";
import Database from "better-sqlite3";
import { makeDirs } from "../fs/make-dirs.js";
import {
  type Event,
  FIRST_ATTEMPT_ID,
  type Model,
  type ModelRow,
  modelFromRow,
  type ResourceVersion,
  type Rollout,
  type RolloutCreate,
  RolloutNotFound,
  type RolloutPatch,
  type RolloutState,
  RolloutStateSchema,
  StoreUnavailable,
  type TerminalPage,
} from "../protocol/index.js";
import { StoreOpenError } from "./errors.js";
import { type BusyRetry, busyRetryDelayMs, DEFAULT_BUSY_RETRY, GroupCommit } from "./group-commit.js";
import { type AttemptCheckedRollout, applyPatch, buildRollout, checkEventWrite, nowSeconds } from "./rollout-rules.js";
import { migrate } from "./sqlite-migrations.js";
import {
  EVENT_COLUMNS,
  type EventRow,
  eventFromRow,
  ROLLOUT_COLUMNS,
  type RolloutSqlRow,
  rolloutFromRow,
  rolloutStatusToParams,
  rolloutToParams,
} from "./sqlite-rows.js";
import type { EventQuery, EventWrite, RolloutQuery, Store } from "./store.js";

/** A `resources` row as SQLite returns it (`value` is JSON text). */
interface ResourceRow {
  name: string;
  version: number;
  value: string;
  created_at: number;
}

function resourceFromRow(row: ResourceRow): ResourceVersion {
  return { name: row.name, version: row.version, value: JSON.parse(row.value), created_at: row.created_at };
}

/** Options of {@link SqliteStore.open}. */
export interface SqliteStoreOptions {
  /** `NORMAL`: durable against a process crash, an OS crash may drop the last commits. `FULL`: fsync every commit. */
  synchronous?: "NORMAL" | "FULL";
  /**
   * SQLite's `busy_timeout`, ms (default 10): SQLite waits by sleeping Node's event loop, so this stays short and a
   * write finding the lock taken retries on a timer (`lockWaitMs`).
   */
  busyTimeoutMs?: number;
  /** How long a write retries on another connection's lock before `StoreUnavailable` (503), ms; default 10 000. */
  lockWaitMs?: number;
}

const DEFAULT_BUSY_TIMEOUT_MS = 10;

/** Busy timeout while opening: migrations run once, before the gateway serves anything. */
const OPEN_BUSY_TIMEOUT_MS = 10_000;

/** A hint where SQLite's own message is vague (a folder, no write permission, locked), starting " (", or "". */
function openHint(path: string, reason: string): string {
  if (reason === "database is locked") {
    return ` (another process held its write lock for the ${OPEN_BUSY_TIMEOUT_MS / 1000} s this open waits)`;
  }
  if (reason !== "unable to open database file") return "";
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat?.isDirectory()) return " (it is a folder: give a file path inside it)";
  const [target, access] = stat ? [path, constants.R_OK | constants.W_OK] : [dirname(path), constants.W_OK];
  try {
    accessSync(target, access);
  } catch {
    return stat
      ? " (no permission to read and write the file)"
      : ` (no permission to create a file in ${dirname(path)})`;
  }
  return "";
}

/** True for SQLite's "database is locked" (another connection holds the write lock). */
function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "SQLITE_BUSY" || code === "SQLITE_BUSY_SNAPSHOT";
}

/** The error of a write that waited `waitedMs` for the write lock in vain. */
function lockTimeout(err: unknown, waitedMs: number): StoreUnavailable {
  const message = `SQLite store: the database is locked by another connection (waited ${Math.round(waitedMs)} ms)`;
  return new StoreUnavailable(message, { cause: err, retryAfterSeconds: 1 });
}

/** A write that must wait because earlier appends are still waiting for the lock (they commit first). */
function queuedBehindBusy(): Error {
  return Object.assign(new Error("earlier event appends wait for the write lock"), { code: "SQLITE_BUSY" });
}

const INSERT_ROLLOUT = `INSERT INTO rollouts (rollout_id, input, data_id, is_train, config, metadata, state,
  k8s_job_name, last_attempt_id, error_message, version, created_at, updated_at)
  VALUES (@rollout_id, @input, @data_id, @is_train, @config, @metadata, @state,
  @k8s_job_name, @last_attempt_id, @error_message, @version, @created_at, @updated_at)`;
const UPDATE_STATUS = `UPDATE rollouts SET state = @state, k8s_job_name = @k8s_job_name,
  last_attempt_id = @last_attempt_id, error_message = @error_message, version = @version, updated_at = @updated_at
  WHERE rollout_id = @rollout_id`;
const INSERT_EVENT = `INSERT INTO events (rollout_id, sequence, attempt_id, event_type, timestamp, data, event_id, late)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;
const LIST_TERMINAL = `SELECT t.position, r.rollout_id, r.state, r.data_id, r.is_train
  FROM terminal t JOIN rollouts r ON r.rollout_id = t.rollout_id
  WHERE t.position > ? ORDER BY t.position LIMIT ?`;

/** Longest delay, ms, before {@link SqliteStore.revision} sees another process's commit. */
export const CROSS_PROCESS_POLL_MS = 5;

/** One queued {@link SqliteStore.appendEvents} call. */
interface AppendJob {
  rolloutId: string;
  attemptId: string;
  events: readonly EventWrite[];
}

interface TerminalRow {
  position: number;
  rollout_id: string;
  state: RolloutState;
  data_id: string;
  is_train: number;
}

/** A `Store` in one SQLite file. Several processes may open the same file; writes serialise on SQLite's write lock. */
export class SqliteStore implements Store {
  private readonly db: Database.Database;
  /** Prepared statements by SQL text (built lazily; filtered queries vary their WHERE clause). */
  private readonly statements = new Map<string, Database.Statement>();
  /** One `BEGIN IMMEDIATE` wrapper built once: `db.transaction()` builds five closures per call. */
  private readonly immediate: <T>(fn: () => T) => T;
  /** Bumped by every write of this connection other than an event append (see {@link Store.revision}). */
  private writes = 0;
  /** `PRAGMA data_version` as last read: it changes when another connection commits to the file. */
  private dataVersion = -1;
  /** When `dataVersion` was last read (`performance.now()`, ms). */
  private dataVersionReadAt = Number.NEGATIVE_INFINITY;
  private readonly dataVersionStmt: Database.Statement;
  /** Event appends waiting for the next group commit. */
  private readonly appends: GroupCommit<AppendJob, Event[]>;

  private readonly busyRetry: BusyRetry;

  private constructor(db: Database.Database, lockWaitMs: number) {
    this.db = db;
    this.busyRetry = { ...DEFAULT_BUSY_RETRY, lockWaitMs };
    const run = db.transaction((fn: () => unknown) => fn());
    this.immediate = run.immediate as <T>(fn: () => T) => T;
    this.dataVersionStmt = db.prepare("PRAGMA data_version").pluck();
    this.appends = new GroupCommit<AppendJob, Event[]>(
      {
        transaction: (fn) => this.immediate(fn),
        // Called inside the open transaction, better-sqlite3 runs a transaction function as a SAVEPOINT.
        savepoint: run as <T>(fn: () => T) => T,
        inTransaction: () => db.inTransaction,
        apply: (job) => this.appendNow(job.rolloutId, job.attemptId, job.events),
        // appendNow checks and serialises everything before its first INSERT: one event is one statement.
        needsSavepoint: (job) => job.events.length > 1,
        isBusy,
        busyTimeout: lockTimeout,
      },
      this.busyRetry,
    );
  }

  /** Opens (creating) the store at `path` and migrates. @throws {StoreOpenError} not SQLite, not creatable, too new */
  static open(path: string, options: SqliteStoreOptions = {}): SqliteStore {
    let db: Database.Database | undefined;
    try {
      if (path !== ":memory:") makeDirs(dirname(path));
      db = new Database(path, { timeout: OPEN_BUSY_TIMEOUT_MS });
      db.pragma("journal_mode = WAL");
      db.pragma(`synchronous = ${options.synchronous ?? "NORMAL"}`);
      db.pragma("foreign_keys = ON");
      migrate(db);
      db.pragma(`busy_timeout = ${Math.max(0, Math.round(options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS))}`);
      return new SqliteStore(db, options.lockWaitMs ?? DEFAULT_BUSY_RETRY.lockWaitMs);
    } catch (err) {
      db?.close();
      const reason = err instanceof Error ? err.message : String(err);
      throw new StoreOpenError(`cannot open SQLite store ${path}: ${reason}${openHint(path, reason)}`, { cause: err });
    }
  }

  private stmt(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Runs `fn` in `BEGIN IMMEDIATE` after committing queued appends, so writes apply in call order; a taken lock is
   * retried on a timer. @throws {StoreUnavailable} the lock stayed taken for `lockWaitMs`
   */
  private async write<T>(fn: () => T): Promise<T> {
    const startedAtMs = performance.now();
    for (let retry = 0; ; retry++) {
      try {
        this.appends.flush();
        if (this.appends.pendingCount > 0) throw queuedBehindBusy();
        this.writes++;
        return this.immediate(fn);
      } catch (err) {
        if (!isBusy(err)) throw err;
        const waitedMs = performance.now() - startedAtMs;
        if (waitedMs >= this.busyRetry.lockWaitMs) throw lockTimeout(err, waitedMs);
        await new Promise((resolve) => setTimeout(resolve, busyRetryDelayMs(retry, this.busyRetry)));
      }
    }
  }

  /** Commits queued appends before a read, so a read sees every write called before it. */
  private read(): void {
    this.appends.flush();
  }

  private readRollout(rolloutId: string): Rollout | undefined {
    const row = this.stmt(`SELECT ${ROLLOUT_COLUMNS} FROM rollouts WHERE rollout_id = ?`).get(rolloutId);
    return row ? rolloutFromRow(row as RolloutSqlRow) : undefined;
  }

  async createRollouts(creates: readonly RolloutCreate[]): Promise<Rollout[]> {
    return this.write(() => {
      const now = nowSeconds();
      return creates.map((create) => {
        // A caller-given id that exists (stored earlier or earlier in this batch) returns the stored rollout.
        const existing = create.rollout_id === undefined ? undefined : this.readRollout(create.rollout_id);
        if (existing) return existing;
        const rollout = buildRollout(create, now);
        this.stmt(INSERT_ROLLOUT).run(rolloutToParams(rollout));
        this.addAttempt(rollout.rollout_id, FIRST_ATTEMPT_ID);
        return structuredClone(rollout);
      });
    });
  }

  /** Records that `attemptId` has been the rollout's current attempt. */
  private addAttempt(rolloutId: string, attemptId: string): void {
    this.stmt("INSERT INTO attempts (rollout_id, attempt_id) VALUES (?, ?) ON CONFLICT DO NOTHING").run(
      rolloutId,
      attemptId,
    );
  }

  async getRollout(rolloutId: string): Promise<Rollout | undefined> {
    this.read();
    return this.readRollout(rolloutId);
  }

  async listRollouts(query: RolloutQuery = {}): Promise<Rollout[]> {
    this.read();
    const { states, isTrain, limit = 500, offset = 0 } = query;
    const where: string[] = [];
    const params: unknown[] = [];
    if (states && states.length > 0) {
      // Deduplicated, so at most 4 placeholders: the statement cache stays small.
      const distinct = [...new Set(states)];
      where.push(`state IN (${distinct.map(() => "?").join(", ")})`);
      params.push(...distinct);
    }
    if (isTrain !== undefined) {
      where.push("is_train = ?");
      params.push(isTrain ? 1 : 0);
    }
    const filter = where.length > 0 ? `WHERE ${where.join(" AND ")}` : "";
    const sql = `SELECT ${ROLLOUT_COLUMNS} FROM rollouts ${filter} ORDER BY seq LIMIT ? OFFSET ?`;
    const rows = this.stmt(sql).all(...params, limit, offset) as RolloutSqlRow[];
    return rows.map(rolloutFromRow);
  }

  async patchRollout(rolloutId: string, patch: RolloutPatch): Promise<Rollout> {
    return this.write(() => {
      const stored = this.readRollout(rolloutId);
      if (!stored) throw new RolloutNotFound(rolloutId);
      const attempts = this.stmt("SELECT attempt_id FROM attempts WHERE rollout_id = ?").pluck().all(rolloutId);
      const outcome = applyPatch(stored, patch, new Set(attempts as string[]), nowSeconds());
      if (!outcome.changed) return stored;
      this.stmt(UPDATE_STATUS).run(rolloutStatusToParams(outcome.rollout));
      for (const attemptId of outcome.newAttemptIds) this.addAttempt(rolloutId, attemptId);
      if (outcome.becameTerminal) this.stmt("INSERT INTO terminal (rollout_id) VALUES (?)").run(rolloutId);
      return outcome.rollout;
    });
  }

  async deleteRollout(rolloutId: string): Promise<boolean> {
    return this.write(() => {
      for (const table of ["events", "attempts", "terminal"]) {
        this.stmt(`DELETE FROM ${table} WHERE rollout_id = ?`).run(rolloutId);
      }
      return this.stmt("DELETE FROM rollouts WHERE rollout_id = ?").run(rolloutId).changes > 0;
    });
  }

  async listTerminal(after: number, limit: number): Promise<TerminalPage> {
    this.read();
    // One read transaction: the page and the total come from the same snapshot.
    return this.db
      .transaction(() => {
        const rows = this.stmt(LIST_TERMINAL).all(after, limit) as TerminalRow[];
        const total = this.stmt("SELECT COUNT(*) FROM terminal").pluck().get() as number;
        return {
          items: rows.map((r) => ({
            rollout_id: r.rollout_id,
            state: r.state,
            data_id: r.data_id,
            is_train: r.is_train === 1,
          })),
          next_after: rows.length > 0 ? rows[rows.length - 1]!.position : after,
          total_terminal: total,
        };
      })
      .deferred();
  }

  async appendEvents(rolloutId: string, attemptId: string, events: readonly EventWrite[]): Promise<Event[]> {
    if (!this.db.open) throw new TypeError("The database connection is not open");
    return this.appends.enqueue({ rolloutId, attemptId, events });
  }

  /** One append inside the group commit; everything that can throw runs before the first INSERT. */
  private appendNow(rolloutId: string, attemptId: string, events: readonly EventWrite[]): Event[] {
    // Only the state and current attempt: parsing the rollout's JSON columns would be wasted work here.
    const gate = this.stmt("SELECT state, last_attempt_id FROM rollouts WHERE rollout_id = ?").get(rolloutId) as
      | AttemptCheckedRollout["status"]
      | undefined;
    if (!gate) throw new RolloutNotFound(rolloutId);
    const byId = this.stmt(`SELECT ${EVENT_COLUMNS} FROM events WHERE rollout_id = ? AND event_id = ?`);
    const storedEvent = (eventId: string | undefined): Event | undefined => {
      const row = eventId === undefined ? undefined : (byId.get(rolloutId, eventId) as EventRow | undefined);
      return row && eventFromRow(row);
    };
    const wasCurrent = this.stmt("SELECT 1 FROM attempts WHERE rollout_id = ? AND attempt_id = ?").pluck();
    const { late } = checkEventWrite({ rollout_id: rolloutId, status: gate }, attemptId, (id) =>
      Boolean(wasCurrent.get(rolloutId, id)),
    );
    const timestamp = nowSeconds();
    // The write lock is held, so MAX(sequence) cannot move under us, in this process or another one.
    let sequence = this.stmt("SELECT COALESCE(MAX(sequence), 0) FROM events WHERE rollout_id = ?")
      .pluck()
      .get(rolloutId) as number;
    const added = new Map<string, Event>(); // event_id → event new in this batch
    const rows: { event: Event; data: string }[] = [];
    const out = events.map((create) => {
      const replay =
        create.event_id === undefined ? undefined : (storedEvent(create.event_id) ?? added.get(create.event_id));
      if (replay) return replay;
      const event: Event = {
        event_type: create.event_type,
        rollout_id: rolloutId,
        attempt_id: attemptId,
        timestamp,
        // The stored copy is the JSON text; the returned event shares `data` with the create (no second copy).
        data: create.data,
        sequence: ++sequence,
        event_id: create.event_id ?? null,
        ...(late ? { late: true as const } : {}),
      };
      rows.push({ event, data: create.dataJson ?? JSON.stringify(event.data) });
      if (event.event_id !== null) added.set(event.event_id, event);
      return event;
    });
    const insert = this.stmt(INSERT_EVENT);
    for (const { event, data } of rows) {
      insert.run(rolloutId, event.sequence, attemptId, event.event_type, timestamp, data, event.event_id, late ? 1 : 0);
    }
    return out;
  }

  async listEvents(rolloutId: string, query: EventQuery = {}): Promise<Event[]> {
    this.read();
    const where = ["rollout_id = ?"];
    const params: unknown[] = [rolloutId];
    if (query.attemptId !== undefined) {
      where.push("attempt_id = ?");
      params.push(query.attemptId);
    }
    if (query.eventType !== undefined) {
      where.push("event_type = ?");
      params.push(query.eventType);
    }
    const sql = `SELECT ${EVENT_COLUMNS} FROM events WHERE ${where.join(" AND ")} ORDER BY sequence`;
    return (this.stmt(sql).all(...params) as EventRow[]).map(eventFromRow);
  }

  async listAttempts(rolloutId: string): Promise<string[]> {
    this.read();
    const sql = "SELECT attempt_id FROM events WHERE rollout_id = ? GROUP BY attempt_id ORDER BY MIN(sequence)";
    return this.stmt(sql).pluck().all(rolloutId) as string[];
  }

  async addResourceVersion(name: string, value: unknown): Promise<ResourceVersion> {
    return this.write(() => {
      // Inside the write transaction (BEGIN IMMEDIATE): no other connection can take the same next version.
      const next = (this.stmt("SELECT COALESCE(MAX(version), 0) + 1 FROM resources WHERE name = ?").pluck().get(name) ??
        1) as number;
      const createdAt = nowSeconds();
      this.stmt("INSERT INTO resources (name, version, value, created_at) VALUES (?, ?, ?, ?)").run(
        name,
        next,
        JSON.stringify(value),
        createdAt,
      );
      return { name, version: next, value: structuredClone(value), created_at: createdAt };
    });
  }

  async getResource(name: string, version?: number): Promise<ResourceVersion | undefined> {
    this.read();
    const sql = "SELECT name, version, value, created_at FROM resources WHERE name = ?";
    const row = (
      version === undefined
        ? this.stmt(`${sql} ORDER BY version DESC LIMIT 1`).get(name)
        : this.stmt(`${sql} AND version = ?`).get(name, version)
    ) as ResourceRow | undefined;
    return row === undefined ? undefined : resourceFromRow(row);
  }

  async listLatestResources(): Promise<ResourceVersion[]> {
    this.read();
    const rows = this.stmt(`SELECT r.name, r.version, r.value, r.created_at FROM resources r
      JOIN (SELECT name, MAX(version) AS version FROM resources GROUP BY name) latest
      ON r.name = latest.name AND r.version = latest.version ORDER BY r.name`).all() as ResourceRow[];
    return rows.map(resourceFromRow);
  }

  async upsertModels(models: readonly Model[]): Promise<Model[]> {
    return this.write(() => {
      // Mode, tokenizer and parsers left out keep their stored values (mergeModel).
      const upsert = this.stmt(`INSERT INTO models (model, endpoint, version, mode, tokenizer, tool_parser,
        reasoning_parser)
        VALUES (:model, :endpoint, :version, COALESCE(:mode, 'passthrough'), :tokenizer, :tool_parser,
        :reasoning_parser)
        ON CONFLICT (model, endpoint) DO UPDATE SET version = excluded.version,
        mode = COALESCE(:mode, models.mode), tokenizer = COALESCE(:tokenizer, models.tokenizer),
        tool_parser = COALESCE(:tool_parser, models.tool_parser),
        reasoning_parser = COALESCE(:reasoning_parser, models.reasoning_parser)
        RETURNING model, endpoint, version, mode, tokenizer, tool_parser, reasoning_parser`);
      return models.map((m) => {
        const params = {
          ...m,
          mode: m.mode ?? null,
          tokenizer: m.tokenizer ?? null,
          tool_parser: m.tool_parser ?? null,
          reasoning_parser: m.reasoning_parser ?? null,
        };
        return modelFromRow(upsert.get(params) as ModelRow);
      });
    });
  }

  async listModels(model?: string): Promise<Model[]> {
    this.read();
    const sql = "SELECT model, endpoint, version, mode, tokenizer, tool_parser, reasoning_parser FROM models";
    const order = " ORDER BY model, endpoint";
    const rows = (
      model === undefined ? this.stmt(sql + order).all() : this.stmt(`${sql} WHERE model = ?${order}`).all(model)
    ) as ModelRow[];
    return rows.map(modelFromRow);
  }

  async deleteModels(model?: string): Promise<number> {
    return this.write(() => {
      if (model === undefined) return this.stmt("DELETE FROM models").run().changes;
      return this.stmt("DELETE FROM models WHERE model = ?").run(model).changes;
    });
  }

  async countByState(): Promise<Record<RolloutState, number>> {
    this.read();
    const counts = Object.fromEntries(RolloutStateSchema.options.map((s) => [s, 0])) as Record<RolloutState, number>;
    const rows = this.stmt("SELECT state, COUNT(*) AS n FROM rollouts GROUP BY state").all() as {
      state: RolloutState;
      n: number;
    }[];
    for (const row of rows) counts[row.state] = row.n;
    return counts;
  }

  async countEvents(): Promise<number> {
    this.read();
    return this.stmt("SELECT COUNT(*) FROM events").pluck().get() as number;
  }

  /**
   * Own writes count at once; `PRAGMA data_version` (other connections' commits) is read at most every
   * {@link CROSS_PROCESS_POLL_MS}, since each read opens a WAL snapshot, too costly per proxied call.
   */
  revision(): number {
    const now = performance.now();
    if (now - this.dataVersionReadAt >= CROSS_PROCESS_POLL_MS) {
      this.dataVersionReadAt = now;
      const dataVersion = this.dataVersionStmt.get() as number;
      if (dataVersion !== this.dataVersion) {
        this.dataVersion = dataVersion;
        this.writes++;
      }
    }
    return this.writes;
  }

  async ping(): Promise<void> {
    this.db.prepare("SELECT 1").get();
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    this.appends.flush();
    try {
      this.db.pragma("optimize"); // refreshes planner statistics the queries of this connection would benefit from
    } finally {
      this.db.close();
    }
  }
}
