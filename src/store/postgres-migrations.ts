/**
 * @module The PostgreSQL schema's migrations (version in `arclight_schema`); never edit a released one. JSON columns
 * are `json` (`jsonb` would reject `\u0000` and re-order keys), times epoch seconds.
 */
import type pg from "pg";
import { StoreOpenError } from "./errors.js";

/** One schema step. `sql` runs in the same transaction that sets the schema version to `version`. */
export interface PgMigration {
  /** Schema version after this step: 1, 2, … with no gaps. */
  version: number;
  /** What the step adds, one line. */
  description: string;
  /** DDL (and any backfill) of the step. */
  sql: string;
}

/**
 * The batched append (migration 1). Input `[{r, a, t, e: [{type, id, data}]}]`; per job `{error: "not_found"}`,
 * `{error: "stale", current}`, `{error: "finished", state}` or `{ok: [...]}`. Rollouts are locked in id order (so
 * replicas cannot deadlock), then events go after MAX(sequence), fixed while the row lock is held.
 */
const APPEND_FUNCTION = `
CREATE FUNCTION arclight_append_events(batch json) RETURNS json LANGUAGE plpgsql AS $fn$
DECLARE
  job json;
  ev json;
  gate record;
  seq integer;
  replay json;
  outs json[];
  results json[] := '{}';
BEGIN
  PERFORM 1 FROM rollouts WHERE rollout_id IN (SELECT j->>'r' FROM json_array_elements(batch) j)
    ORDER BY rollout_id FOR UPDATE;
  FOR job IN SELECT j FROM json_array_elements(batch) j LOOP
    SELECT state, last_attempt_id INTO gate FROM rollouts WHERE rollout_id = job->>'r';
    IF NOT FOUND THEN
      results := results || json_build_object('error', 'not_found');
      CONTINUE;
    END IF;
    IF gate.last_attempt_id IS DISTINCT FROM job->>'a' THEN
      results := results || json_build_object('error', 'stale', 'current', gate.last_attempt_id);
      CONTINUE;
    END IF;
    IF gate.state IN ('succeeded', 'failed') AND EXISTS (
      SELECT 1 FROM json_array_elements(job->'e') e
      WHERE e->>'id' IS NULL
         OR NOT EXISTS (SELECT 1 FROM events s WHERE s.rollout_id = job->>'r' AND s.event_id = e->>'id')
    ) THEN
      results := results || json_build_object('error', 'finished', 'state', gate.state);
      CONTINUE;
    END IF;
    SELECT COALESCE(MAX(sequence), 0) INTO seq FROM events WHERE rollout_id = job->>'r';
    outs := '{}';
    FOR ev IN SELECT e FROM json_array_elements(job->'e') e LOOP
      replay := NULL;
      IF ev->>'id' IS NOT NULL THEN
        SELECT json_build_object('event_type', s.event_type, 'rollout_id', s.rollout_id, 'attempt_id', s.attempt_id,
            'timestamp', s.timestamp, 'data', s.data, 'sequence', s.sequence, 'event_id', s.event_id)
          INTO replay FROM events s WHERE s.rollout_id = job->>'r' AND s.event_id = ev->>'id';
      END IF;
      IF replay IS NOT NULL THEN
        outs := outs || replay;
      ELSE
        seq := seq + 1;
        INSERT INTO events (rollout_id, sequence, attempt_id, event_type, timestamp, data, event_id)
          VALUES (job->>'r', seq, job->>'a', ev->>'type', (job->>'t')::double precision, (ev->>'data')::json,
                  ev->>'id');
        outs := outs || json_build_object('sequence', seq);
      END IF;
    END LOOP;
    results := results || json_build_object('ok', array_to_json(outs));
  END LOOP;
  RETURN array_to_json(results);
END
$fn$;`;

/** {@link APPEND_FUNCTION} on `jsonb`, parsed once (`json` operators re-parse at every `->`). Same input and output. */
const APPEND_FUNCTION_V3 = `
DROP FUNCTION arclight_append_events(json);
CREATE FUNCTION arclight_append_events(batch jsonb) RETURNS json LANGUAGE plpgsql AS $fn$
DECLARE
  job jsonb;
  ev jsonb;
  rid text;
  aid text;
  ts double precision;
  gate record;
  seq integer;
  replay json;
  outs json[];
  results json[] := '{}';
BEGIN
  PERFORM 1 FROM rollouts WHERE rollout_id IN (SELECT j->>'r' FROM jsonb_array_elements(batch) j)
    ORDER BY rollout_id FOR UPDATE;
  FOR job IN SELECT j FROM jsonb_array_elements(batch) j LOOP
    rid := job->>'r';
    aid := job->>'a';
    ts := (job->>'t')::double precision;
    SELECT state, last_attempt_id INTO gate FROM rollouts WHERE rollout_id = rid;
    IF NOT FOUND THEN
      results := results || json_build_object('error', 'not_found');
      CONTINUE;
    END IF;
    IF gate.last_attempt_id IS DISTINCT FROM aid THEN
      results := results || json_build_object('error', 'stale', 'current', gate.last_attempt_id);
      CONTINUE;
    END IF;
    IF gate.state IN ('succeeded', 'failed') AND EXISTS (
      SELECT 1 FROM jsonb_array_elements(job->'e') e
      WHERE e->>'id' IS NULL
         OR NOT EXISTS (SELECT 1 FROM events s WHERE s.rollout_id = rid AND s.event_id = e->>'id')
    ) THEN
      results := results || json_build_object('error', 'finished', 'state', gate.state);
      CONTINUE;
    END IF;
    SELECT COALESCE(MAX(sequence), 0) INTO seq FROM events WHERE rollout_id = rid;
    outs := '{}';
    FOR ev IN SELECT e FROM jsonb_array_elements(job->'e') e LOOP
      replay := NULL;
      IF ev->>'id' IS NOT NULL THEN
        SELECT json_build_object('event_type', s.event_type, 'rollout_id', s.rollout_id, 'attempt_id', s.attempt_id,
            'timestamp', s.timestamp, 'data', s.data, 'sequence', s.sequence, 'event_id', s.event_id)
          INTO replay FROM events s WHERE s.rollout_id = rid AND s.event_id = ev->>'id';
      END IF;
      IF replay IS NOT NULL THEN
        outs := outs || replay;
      ELSE
        seq := seq + 1;
        INSERT INTO events (rollout_id, sequence, attempt_id, event_type, timestamp, data, event_id)
          VALUES (rid, seq, aid, ev->>'type', ts, (ev->>'data')::json, ev->>'id');
        outs := outs || json_build_object('sequence', seq);
      END IF;
    END LOOP;
    results := results || json_build_object('ok', array_to_json(outs));
  END LOOP;
  RETURN array_to_json(results);
END
$fn$;`;

/**
 * {@link APPEND_FUNCTION_V3} with AGL v1.0's attempt rules: an attempt once current but no longer → `stale`; one never
 * current is accepted; a terminal rollout's events are stored `late` (no more `finished`).
 */
const APPEND_FUNCTION_V4 = `
CREATE OR REPLACE FUNCTION arclight_append_events(batch jsonb) RETURNS json LANGUAGE plpgsql AS $fn$
DECLARE
  job jsonb;
  ev jsonb;
  rid text;
  aid text;
  ts double precision;
  gate record;
  current_attempt text;
  is_late boolean;
  seq integer;
  replay json;
  outs json[];
  results json[] := '{}';
BEGIN
  PERFORM 1 FROM rollouts WHERE rollout_id IN (SELECT j->>'r' FROM jsonb_array_elements(batch) j)
    ORDER BY rollout_id FOR UPDATE;
  FOR job IN SELECT j FROM jsonb_array_elements(batch) j LOOP
    rid := job->>'r';
    aid := job->>'a';
    ts := (job->>'t')::double precision;
    SELECT state, last_attempt_id INTO gate FROM rollouts WHERE rollout_id = rid;
    IF NOT FOUND THEN
      results := results || json_build_object('error', 'not_found');
      CONTINUE;
    END IF;
    current_attempt := COALESCE(gate.last_attempt_id, '0');
    IF current_attempt <> aid AND EXISTS (SELECT 1 FROM attempts WHERE rollout_id = rid AND attempt_id = aid) THEN
      results := results || json_build_object('error', 'stale', 'current', current_attempt);
      CONTINUE;
    END IF;
    is_late := gate.state IN ('succeeded', 'failed');
    SELECT COALESCE(MAX(sequence), 0) INTO seq FROM events WHERE rollout_id = rid;
    outs := '{}';
    FOR ev IN SELECT e FROM jsonb_array_elements(job->'e') e LOOP
      replay := NULL;
      IF ev->>'id' IS NOT NULL THEN
        SELECT json_build_object('event_type', s.event_type, 'rollout_id', s.rollout_id, 'attempt_id', s.attempt_id,
            'timestamp', s.timestamp, 'data', s.data, 'sequence', s.sequence, 'event_id', s.event_id, 'late', s.late)
          INTO replay FROM events s WHERE s.rollout_id = rid AND s.event_id = ev->>'id';
      END IF;
      IF replay IS NOT NULL THEN
        outs := outs || replay;
      ELSE
        seq := seq + 1;
        INSERT INTO events (rollout_id, sequence, attempt_id, event_type, timestamp, data, event_id, late)
          VALUES (rid, seq, aid, ev->>'type', ts, (ev->>'data')::json, ev->>'id', is_late);
        outs := outs || json_build_object('sequence', seq);
      END IF;
    END LOOP;
    results := results || json_build_object('ok', array_to_json(outs), 'late', is_late);
  END LOOP;
  RETURN array_to_json(results);
END
$fn$;`;

/** Every migration, oldest first. */
export const PG_MIGRATIONS: readonly PgMigration[] = Object.freeze([
  {
    version: 1,
    description: "rollouts, attempts, events, terminal cursor, models, revision notifications, batched append",
    sql: `
      CREATE TABLE rollouts (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- creation order
        rollout_id text NOT NULL UNIQUE,
        input json NOT NULL,
        data_id text NOT NULL,                 -- dataIdOf(input), for the terminal cursor
        is_train boolean NOT NULL,
        config json NOT NULL,
        metadata json NOT NULL,
        state text NOT NULL,
        k8s_job_name text,
        last_attempt_id text,
        error_message text,
        version integer NOT NULL,
        created_at double precision NOT NULL,  -- epoch seconds
        updated_at double precision NOT NULL
      );
      CREATE INDEX rollouts_state ON rollouts (state, seq);
      CREATE INDEX rollouts_updated_at ON rollouts (updated_at);  -- retention: finding old rollouts
      CREATE TABLE attempts (
        rollout_id text NOT NULL REFERENCES rollouts (rollout_id) ON DELETE CASCADE,
        attempt_id text NOT NULL,
        PRIMARY KEY (rollout_id, attempt_id)
      );
      CREATE TABLE events (
        rollout_id text NOT NULL REFERENCES rollouts (rollout_id) ON DELETE CASCADE,
        sequence integer NOT NULL,             -- gap-free per rollout, from 1
        attempt_id text NOT NULL,
        event_type text NOT NULL,
        timestamp double precision NOT NULL,   -- epoch seconds, the writing gateway's clock
        data json NOT NULL,
        event_id text,
        PRIMARY KEY (rollout_id, sequence)
      );
      CREATE UNIQUE INDEX events_event_id ON events (rollout_id, event_id) WHERE event_id IS NOT NULL;
      -- Positions come from terminal_counter, whose row lock is held to commit: positions become visible in order,
      -- so a reader past position N never later finds a new row at or below N (a sequence would not promise that).
      CREATE TABLE terminal (
        position bigint PRIMARY KEY,
        rollout_id text NOT NULL UNIQUE REFERENCES rollouts (rollout_id) ON DELETE CASCADE
      );
      CREATE TABLE terminal_counter (last bigint NOT NULL);
      INSERT INTO terminal_counter VALUES (0);
      CREATE TABLE models (
        model text NOT NULL,
        endpoint text NOT NULL,
        version integer NOT NULL,
        PRIMARY KEY (model, endpoint)
      );
      -- Every statement writing rollouts or models tells listening gateways to drop their caches. The payload is
      -- the writer's application_name, so a gateway can skip its own writes (it already counted them).
      CREATE FUNCTION arclight_notify_revision() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM pg_notify('arclight_revision', current_setting('application_name'));
        RETURN NULL;
      END
      $fn$;
      CREATE TRIGGER rollouts_revision AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON rollouts
        FOR EACH STATEMENT EXECUTE FUNCTION arclight_notify_revision();
      CREATE TRIGGER models_revision AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON models
        FOR EACH STATEMENT EXECUTE FUNCTION arclight_notify_revision();
      ${APPEND_FUNCTION}
    `,
  },
  {
    version: 2,
    description: "proxy pause shared by every gateway (one row, notified on change) and each gateway's in-flight count",
    sql: `
      CREATE TABLE proxy_pause (
        id integer PRIMARY KEY CHECK (id = 1),
        paused boolean NOT NULL,
        retry_after_seconds integer NOT NULL,
        reason text,
        epoch bigint NOT NULL                  -- +1 per pause or resume
      );
      INSERT INTO proxy_pause VALUES (1, false, 0, NULL, 0);
      CREATE TABLE gateway_replicas (
        replica_id text PRIMARY KEY,           -- the gateway's application_name
        inflight integer NOT NULL,             -- proxied model calls in flight there
        applied_epoch bigint NOT NULL,         -- the newest proxy_pause epoch it has applied
        heartbeat_at timestamptz NOT NULL      -- rows older than a few seconds are dead gateways
      );
      CREATE FUNCTION arclight_notify_pause() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM pg_notify('arclight_pause', row_to_json(NEW)::text);
        RETURN NULL;
      END
      $fn$;
      CREATE TRIGGER proxy_pause_notify AFTER UPDATE ON proxy_pause
        FOR EACH ROW EXECUTE FUNCTION arclight_notify_pause();
    `,
  },
  {
    version: 3,
    description: "batched append takes jsonb (parsed once) and reads each job's fields once",
    sql: APPEND_FUNCTION_V3,
  },
  {
    version: 4,
    description: "AGL v1.0 attempt rules: events.late, the append accepts never-current attempts and finished rollouts",
    sql: `
      ALTER TABLE events ADD COLUMN late boolean NOT NULL DEFAULT false;
      ${APPEND_FUNCTION_V4}
    `,
  },
  {
    version: 5,
    description: "proxy pause lease shared by every gateway (proxy_pause.lease_expires_at)",
    sql: "ALTER TABLE proxy_pause ADD COLUMN lease_expires_at double precision; -- epoch s; NULL: no lease",
  },
  {
    version: 6,
    description:
      "models.mode, tokenizer, tool_parser: a model's proxy mode (passthrough | tito), tokenizer folder, parser",
    sql: `
      ALTER TABLE models ADD COLUMN mode text NOT NULL DEFAULT 'passthrough';
      ALTER TABLE models ADD COLUMN tokenizer text;
      ALTER TABLE models ADD COLUMN tool_parser text;
    `,
  },
  {
    version: 7,
    description: "resources: named, versioned values (e.g. a system prompt), every version kept",
    sql: `
      CREATE TABLE resources (
        name text NOT NULL,
        version integer NOT NULL,           -- 1, 2, … per name
        value jsonb NOT NULL,
        created_at double precision NOT NULL, -- epoch seconds
        PRIMARY KEY (name, version)
      );
    `,
  },
  {
    version: 8,
    description: "models.reasoning_parser: how tito splits a model's <think> text off its answer (NULL: none)",
    sql: "ALTER TABLE models ADD COLUMN reasoning_parser text;",
  },
]);

/** The schema version this build writes. */
export const PG_LATEST_SCHEMA_VERSION = PG_MIGRATIONS[PG_MIGRATIONS.length - 1]!.version;

/** Key of the advisory lock that serialises migrations of gateways starting at once. */
const MIGRATION_LOCK_KEY = 0x61726331; // "arc1"

/**
 * Applies pending migrations, each in a transaction under an advisory lock, so gateways starting together apply
 * each once. @throws {StoreOpenError} when the database is newer than the last migration
 */
export async function migratePostgres(
  client: pg.ClientBase,
  migrations: readonly PgMigration[] = PG_MIGRATIONS,
): Promise<number> {
  const latest = migrations[migrations.length - 1]?.version ?? 0;
  let version = 0;
  for (let step = 0; ; step++) {
    await client.query("BEGIN");
    try {
      await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK_KEY]);
      await client.query("CREATE TABLE IF NOT EXISTS arclight_schema (version integer NOT NULL)");
      const rows = (await client.query<{ version: number }>("SELECT version FROM arclight_schema")).rows;
      version = rows[0]?.version ?? 0;
      if (version > latest) {
        throw new StoreOpenError(`schema version ${version} is newer than this arclight supports (${latest})`);
      }
      const next = migrations.find((m) => m.version === version + 1);
      if (next === undefined) {
        await client.query("COMMIT");
        return version;
      }
      await client.query(next.sql);
      if (rows.length === 0) await client.query("INSERT INTO arclight_schema VALUES ($1)", [next.version]);
      else await client.query("UPDATE arclight_schema SET version = $1", [next.version]);
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    }
    if (step > migrations.length) throw new Error("migration loop did not converge");
  }
}
