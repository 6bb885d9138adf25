/**
 * @module The SQLite schema's migrations (version in `PRAGMA user_version`); never edit a released one, and keep DDL
 * portable where cheap, since PostgreSQL mirrors it.
 */
import type Database from "better-sqlite3";

/** One schema step. `sql` runs in the same transaction that sets `user_version` to `version`. */
export interface Migration {
  /** Schema version after this step: 1, 2, … with no gaps. */
  version: number;
  /** What the step adds, one line. */
  description: string;
  /** DDL (and any backfill) of the step. */
  sql: string;
}

/** Every migration, oldest first. */
export const MIGRATIONS: readonly Migration[] = Object.freeze([
  {
    version: 1,
    description: "rollouts, events, terminal cursor, model endpoints",
    sql: `
      CREATE TABLE rollouts (
        seq INTEGER PRIMARY KEY,            -- creation order
        rollout_id TEXT NOT NULL UNIQUE,
        input TEXT NOT NULL,                -- JSON
        data_id TEXT NOT NULL,              -- dataIdOf(input), for the terminal cursor
        is_train INTEGER NOT NULL,
        config TEXT NOT NULL,               -- JSON
        metadata TEXT NOT NULL,             -- JSON
        state TEXT NOT NULL,
        k8s_job_name TEXT,
        last_attempt_id TEXT,
        error_message TEXT,
        version INTEGER NOT NULL,
        created_at REAL NOT NULL,           -- epoch seconds
        updated_at REAL NOT NULL
      );
      CREATE INDEX rollouts_state ON rollouts (state, seq);
      CREATE TABLE events (
        rollout_id TEXT NOT NULL REFERENCES rollouts (rollout_id),
        sequence INTEGER NOT NULL,          -- gap-free per rollout, from 1
        attempt_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        timestamp REAL NOT NULL,            -- epoch seconds, server clock
        data TEXT NOT NULL,                 -- JSON
        event_id TEXT,
        PRIMARY KEY (rollout_id, sequence)
      );
      -- Partial: events without a caller-given id (most of them) skip this index entirely.
      CREATE UNIQUE INDEX events_event_id ON events (rollout_id, event_id) WHERE event_id IS NOT NULL;
      -- AUTOINCREMENT: a position is never handed out twice, even after the newest row is deleted.
      CREATE TABLE terminal (
        position INTEGER PRIMARY KEY AUTOINCREMENT,
        rollout_id TEXT NOT NULL UNIQUE REFERENCES rollouts (rollout_id)
      );
      CREATE TABLE models (
        model TEXT NOT NULL,
        endpoint TEXT NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (model, endpoint)
      );
    `,
  },
  {
    version: 2,
    description: "attempts table (every attempt id a rollout has had), backfilled from rollouts and events",
    sql: `
      CREATE TABLE attempts (
        rollout_id TEXT NOT NULL REFERENCES rollouts (rollout_id),
        attempt_id TEXT NOT NULL,
        PRIMARY KEY (rollout_id, attempt_id)
      );
      INSERT INTO attempts (rollout_id, attempt_id)
        SELECT rollout_id, last_attempt_id FROM rollouts WHERE last_attempt_id IS NOT NULL
        UNION SELECT rollout_id, attempt_id FROM events;  -- UNION dedupes; the table starts empty
    `,
  },
  {
    version: 3,
    description: "events.late: 1 for an event that arrived after its rollout finished",
    sql: `
      ALTER TABLE events ADD COLUMN late INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 4,
    description:
      "models.mode, tokenizer, tool_parser: a model's proxy mode (passthrough | tito), tokenizer folder, parser",
    sql: `
      ALTER TABLE models ADD COLUMN mode TEXT NOT NULL DEFAULT 'passthrough';
      ALTER TABLE models ADD COLUMN tokenizer TEXT;
      ALTER TABLE models ADD COLUMN tool_parser TEXT;
    `,
  },
  {
    version: 5,
    description: "resources: named, versioned values (e.g. a system prompt), every version kept",
    sql: `
      CREATE TABLE resources (
        name TEXT NOT NULL,
        version INTEGER NOT NULL,           -- 1, 2, … per name
        value TEXT NOT NULL,                -- JSON
        created_at REAL NOT NULL,           -- epoch seconds
        PRIMARY KEY (name, version)
      );
    `,
  },
  {
    version: 6,
    description: "models.reasoning_parser: how tito splits a model's <think> text off its answer (NULL: none)",
    sql: "ALTER TABLE models ADD COLUMN reasoning_parser TEXT;",
  },
]);

/** The schema version this build writes. */
export const LATEST_SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/**
 * Applies pending migrations, each in `BEGIN IMMEDIATE` with the version read inside, so concurrent openers apply each
 * once. @throws {RangeError} when the file is newer than the last migration
 */
export function migrate(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): number {
  const latest = migrations[migrations.length - 1]?.version ?? 0;
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > latest) {
    throw new RangeError(`schema version ${current} is newer than this arclight supports (${latest})`);
  }
  for (const migration of migrations) {
    db.transaction(() => {
      const version = db.pragma("user_version", { simple: true }) as number;
      if (version >= migration.version) return;
      db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    }).immediate();
  }
  return db.pragma("user_version", { simple: true }) as number;
}
