/**
 * @module PostgreSQL `Store` shared by several gateways. Each write is a READ COMMITTED transaction that first locks
 * the rollout's row (`FOR UPDATE`): every check reads one rollout, so the lock makes check-then-write atomic without
 * the aborts SERIALIZABLE would cause under concurrent appends. Other replicas' writes arrive via `LISTEN/NOTIFY`.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
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
  type TerminalPage,
} from "../protocol/index.js";
import { StoreOpenError } from "./errors.js";
import { PgAppendBatcher } from "./postgres-append.js";
import { asStoreError, withConflictRetry } from "./postgres-connection.js";
import { PgListener } from "./postgres-listener.js";
import { migratePostgres } from "./postgres-migrations.js";
import { PAUSE_CHANNEL, PgSharedPause } from "./postgres-pause.js";
import {
  eventFromPgRow,
  PG_EVENT_COLUMNS,
  PG_INSERT_ROLLOUT,
  PG_ROLLOUT_COLUMNS,
  PG_UPDATE_STATUS,
  type PgEventRow,
  type PgRolloutRow,
  rolloutFromPgRow,
  rolloutInsertParams,
  statusUpdateParams,
} from "./postgres-rows.js";
import { applyPatch, buildRollout, nowSeconds } from "./rollout-rules.js";
import type { EventQuery, EventWrite, RolloutQuery, Store } from "./store.js";

/** Options of {@link PostgresStore.open}. */
export interface PostgresStoreOptions {
  /** Most connections the pool opens (plus one for `LISTEN`); default 10. */
  poolSize?: number;
  /** How long a call waits for a new connection before failing with `StoreUnavailable` (ms); default 5 000. */
  connectTimeoutMs?: number;
}

/** The channel of the revision notifications (see the trigger in `postgres-migrations.ts`). */
export const REVISION_CHANNEL = "arclight_revision";

const LIST_TERMINAL = `WITH page AS (
    SELECT t.position, r.rollout_id, r.state, r.data_id, r.is_train
    FROM terminal t JOIN rollouts r ON r.rollout_id = t.rollout_id
    WHERE t.position > $1 ORDER BY t.position LIMIT $2)
  SELECT (SELECT count(*) FROM terminal)::integer AS total,
    COALESCE(json_agg(page ORDER BY page.position), '[]') AS items FROM page`;

interface TerminalItemRow {
  position: number;
  rollout_id: string;
  state: RolloutState;
  data_id: string;
  is_train: boolean;
}

/** A `Store` in one PostgreSQL database, shareable by several gateway processes. */
export class PostgresStore implements Store {
  private readonly appends: PgAppendBatcher;
  /** Bumped around every write of this store and on every other writer's notification (see {@link revision}). */
  private revisionCount = 0;
  private closed = false;
  private pause: PgSharedPause | undefined;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly listener: PgListener,
    /** This store's `application_name`: the payload of its own notifications, which it skips. */
    readonly applicationName: string,
  ) {
    this.appends = new PgAppendBatcher(pool);
  }

  /** Connects, migrates and starts listening. @throws {StoreOpenError} unreachable, login failed, or schema too new */
  static async open(givenUrl: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    // Each store needs its own application_name (it tells its own notifications from other replicas'), and
    // node-postgres lets one in the URL win over the option: drop it from the URL.
    const url = withoutApplicationName(givenUrl);
    const applicationName = `arclight-${randomBytes(6).toString("hex")}`;
    const pool = new pg.Pool({
      connectionString: url,
      application_name: applicationName,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    });
    // An idle client whose server went away emits here; the pool drops it and the next call reconnects.
    pool.on("error", () => undefined);
    try {
      const client = await pool.connect();
      try {
        await migratePostgres(client);
      } finally {
        client.release();
      }
    } catch (err) {
      await pool.end().catch(() => undefined);
      if (err instanceof StoreOpenError) throw new StoreOpenError(`PostgreSQL store ${redact(url)}: ${err.message}`);
      const reason = err instanceof Error ? err.message : String(err);
      throw new StoreOpenError(`cannot open PostgreSQL store ${redact(url)}: ${reason}`, { cause: err });
    }
    let store: PostgresStore | undefined;
    const listener = new PgListener({
      connectionString: url,
      applicationName,
      channels: [REVISION_CHANNEL, PAUSE_CHANNEL],
      onNotification: (channel, payload) => store?.notified(channel, payload),
      onConnected: () => store?.reconnected(),
    });
    store = new PostgresStore(pool, listener, applicationName);
    await listener.ready;
    return store;
  }

  private notified(channel: string, payload: string): void {
    if (channel === PAUSE_CHANNEL) this.pause?.onNotification(payload);
    else if (payload !== this.applicationName) this.revisionCount++;
  }

  /** The `LISTEN` connection is back: notifications may have been missed, so caches and the pause are re-read. */
  private reconnected(): void {
    this.revisionCount++;
    this.pause?.reload().catch(() => undefined); // fails only if the server dropped again; the next connect retries
  }

  /** This gateway's handle on the pause shared by every gateway on the database, loaded. @throws {StoreUnavailable} */
  async sharedPause(): Promise<PgSharedPause> {
    this.assertOpen();
    if (!this.pause) this.pause = new PgSharedPause(this.pool, this.applicationName);
    try {
      await this.pause.reload();
    } catch (err) {
      throw asStoreError(err, "sharedPause");
    }
    return this.pause;
  }

  /** Runs `fn` in one transaction on one pooled connection, retried on deadlock; bumps the revision around it. */
  private async write<T>(what: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    this.assertOpen();
    await this.appends.settled(); // writes apply in the order they were called
    this.revisionCount++;
    try {
      return await withConflictRetry(what, async () => {
        const client = await this.pool.connect();
        let broken: Error | undefined;
        try {
          await client.query("BEGIN");
          const result = await fn(client);
          await client.query("COMMIT");
          return result;
        } catch (err) {
          await client.query("ROLLBACK").catch((e: Error) => (broken = e));
          throw err;
        } finally {
          client.release(broken);
        }
      });
    } finally {
      // After commit too: a read that raced this write and cached the old row is dropped at the next refresh.
      this.revisionCount++;
    }
  }

  /** Runs one read statement after the queued appends, mapping a lost connection to `StoreUnavailable`. */
  private async read<R extends pg.QueryResultRow>(what: string, sql: string, params: unknown[] = []): Promise<R[]> {
    this.assertOpen();
    await this.appends.settled();
    try {
      return (await this.pool.query<R>(sql, params)).rows;
    } catch (err) {
      throw asStoreError(err, what);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("PostgreSQL store is closed");
  }

  async createRollouts(creates: readonly RolloutCreate[]): Promise<Rollout[]> {
    return this.write("createRollouts", async (client) => {
      const now = nowSeconds();
      const out: Rollout[] = [];
      for (const create of creates) {
        const rollout = buildRollout(create, now);
        // ON CONFLICT DO NOTHING waits for a concurrent insert of the same id, then the select reads the winner.
        const inserted = await client.query(PG_INSERT_ROLLOUT, rolloutInsertParams(rollout));
        if (inserted.rowCount === 0) {
          out.push((await selectRollout(client, rollout.rollout_id))!);
          continue;
        }
        await client.query("INSERT INTO attempts VALUES ($1, $2) ON CONFLICT DO NOTHING", [
          rollout.rollout_id,
          FIRST_ATTEMPT_ID,
        ]);
        out.push(structuredClone(rollout));
      }
      return out;
    });
  }

  async getRollout(rolloutId: string): Promise<Rollout | undefined> {
    const rows = await this.read<PgRolloutRow>(
      "getRollout",
      `SELECT ${PG_ROLLOUT_COLUMNS} FROM rollouts WHERE rollout_id = $1`,
      [rolloutId],
    );
    return rows[0] && rolloutFromPgRow(rows[0]);
  }

  async listRollouts(query: RolloutQuery = {}): Promise<Rollout[]> {
    const { states, isTrain, limit = 500, offset = 0 } = query;
    const params: unknown[] = [];
    const where: string[] = [];
    if (states && states.length > 0) where.push(`state = ANY($${params.push([...new Set(states)])}::text[])`);
    if (isTrain !== undefined) where.push(`is_train = $${params.push(isTrain)}`);
    const filter = where.length > 0 ? `WHERE ${where.join(" AND ")}` : "";
    const page = `LIMIT $${params.push(limit)} OFFSET $${params.push(offset)}`;
    const sql = `SELECT ${PG_ROLLOUT_COLUMNS} FROM rollouts ${filter} ORDER BY seq ${page}`;
    return (await this.read<PgRolloutRow>("listRollouts", sql, params)).map(rolloutFromPgRow);
  }

  async patchRollout(rolloutId: string, patch: RolloutPatch): Promise<Rollout> {
    return this.write("patchRollout", async (client) => {
      const stored = await selectRollout(client, rolloutId, "FOR UPDATE");
      if (!stored) throw new RolloutNotFound(rolloutId);
      const attempts = await client.query<{ attempt_id: string }>(
        "SELECT attempt_id FROM attempts WHERE rollout_id = $1",
        [rolloutId],
      );
      const known = new Set(attempts.rows.map((r) => r.attempt_id));
      const outcome = applyPatch(stored, patch, known, nowSeconds());
      if (!outcome.changed) return stored;
      await client.query(PG_UPDATE_STATUS, statusUpdateParams(outcome.rollout));
      for (const attemptId of outcome.newAttemptIds) {
        await client.query("INSERT INTO attempts VALUES ($1, $2) ON CONFLICT DO NOTHING", [rolloutId, attemptId]);
      }
      if (outcome.becameTerminal) {
        // The counter's row lock is held until commit, so positions become visible in the order they are handed out.
        await client.query(
          `WITH c AS (UPDATE terminal_counter SET last = last + 1 RETURNING last)
           INSERT INTO terminal (position, rollout_id) SELECT last, $1 FROM c`,
          [rolloutId],
        );
      }
      return outcome.rollout;
    });
  }

  async deleteRollout(rolloutId: string): Promise<boolean> {
    return this.write("deleteRollout", async (client) => {
      // Events, attempts and the terminal entry go with it (ON DELETE CASCADE); the row lock waits out appends.
      const deleted = await client.query("DELETE FROM rollouts WHERE rollout_id = $1", [rolloutId]);
      return (deleted.rowCount ?? 0) > 0;
    });
  }

  async listTerminal(after: number, limit: number): Promise<TerminalPage> {
    // One statement, one snapshot: the page and the total agree.
    const [row] = await this.read<{ total: number; items: TerminalItemRow[] }>("listTerminal", LIST_TERMINAL, [
      after,
      limit,
    ]);
    const items = row!.items;
    return {
      items: items.map((r) => ({ rollout_id: r.rollout_id, state: r.state, data_id: r.data_id, is_train: r.is_train })),
      next_after: items.length > 0 ? Number(items[items.length - 1]!.position) : after,
      total_terminal: row!.total,
    };
  }

  async appendEvents(rolloutId: string, attemptId: string, events: readonly EventWrite[]): Promise<Event[]> {
    this.assertOpen();
    return this.appends.enqueue(rolloutId, attemptId, events);
  }

  async listEvents(rolloutId: string, query: EventQuery = {}): Promise<Event[]> {
    const params: unknown[] = [rolloutId];
    const where = ["rollout_id = $1"];
    if (query.attemptId !== undefined) where.push(`attempt_id = $${params.push(query.attemptId)}`);
    if (query.eventType !== undefined) where.push(`event_type = $${params.push(query.eventType)}`);
    const sql = `SELECT ${PG_EVENT_COLUMNS} FROM events WHERE ${where.join(" AND ")} ORDER BY sequence`;
    return (await this.read<PgEventRow>("listEvents", sql, params)).map(eventFromPgRow);
  }

  async listAttempts(rolloutId: string): Promise<string[]> {
    const sql = "SELECT attempt_id FROM events WHERE rollout_id = $1 GROUP BY attempt_id ORDER BY MIN(sequence)";
    return (await this.read<{ attempt_id: string }>("listAttempts", sql, [rolloutId])).map((r) => r.attempt_id);
  }

  async addResourceVersion(name: string, value: unknown): Promise<ResourceVersion> {
    return this.write("addResourceVersion", async (client) => {
      // One writer per name at a time, across every gateway on this database: the next version is never taken twice.
      await client.query("SELECT pg_advisory_xact_lock(hashtext('arclight.resource:' || $1))", [name]);
      const createdAt = nowSeconds();
      const result = await client.query<{ version: number }>(
        `INSERT INTO resources (name, version, value, created_at)
         SELECT $1, COALESCE(MAX(version), 0) + 1, $2::jsonb, $3 FROM resources WHERE name = $1 RETURNING version`,
        [name, JSON.stringify(value), createdAt],
      );
      return { name, version: result.rows[0]!.version, value: structuredClone(value), created_at: createdAt };
    });
  }

  async getResource(name: string, version?: number): Promise<ResourceVersion | undefined> {
    const sql = "SELECT name, version, value, created_at FROM resources WHERE name = $1";
    const rows =
      version === undefined
        ? await this.read<ResourceVersion>("getResource", `${sql} ORDER BY version DESC LIMIT 1`, [name])
        : await this.read<ResourceVersion>("getResource", `${sql} AND version = $2`, [name, version]);
    return rows[0];
  }

  async listLatestResources(): Promise<ResourceVersion[]> {
    return this.read<ResourceVersion>(
      "listLatestResources",
      `SELECT DISTINCT ON (name) name, version, value, created_at FROM resources ORDER BY name, version DESC`,
    );
  }

  async upsertModels(models: readonly Model[]): Promise<Model[]> {
    return this.write("upsertModels", async (client) => {
      const stored: Model[] = [];
      // Mode, tokenizer and parsers left out keep their stored values (mergeModel).
      for (const m of models) {
        const { rows } = await client.query<ModelRow>(
          `INSERT INTO models (model, endpoint, version, mode, tokenizer, tool_parser, reasoning_parser)
           VALUES ($1, $2, $3, COALESCE($4::text, 'passthrough'), $5::text, $6::text, $7::text)
           ON CONFLICT (model, endpoint) DO UPDATE SET version = excluded.version,
           mode = COALESCE($4::text, models.mode), tokenizer = COALESCE($5::text, models.tokenizer),
           tool_parser = COALESCE($6::text, models.tool_parser),
           reasoning_parser = COALESCE($7::text, models.reasoning_parser)
           RETURNING model, endpoint, version, mode, tokenizer, tool_parser, reasoning_parser`,
          [
            m.model,
            m.endpoint,
            m.version,
            m.mode ?? null,
            m.tokenizer ?? null,
            m.tool_parser ?? null,
            m.reasoning_parser ?? null,
          ],
        );
        stored.push(modelFromRow(rows[0]!));
      }
      return stored;
    });
  }

  async listModels(model?: string): Promise<Model[]> {
    const sql = "SELECT model, endpoint, version, mode, tokenizer, tool_parser, reasoning_parser FROM models";
    const rows =
      model === undefined
        ? await this.read<ModelRow>("listModels", `${sql} ORDER BY model, endpoint`)
        : await this.read<ModelRow>("listModels", `${sql} WHERE model = $1 ORDER BY endpoint`, [model]);
    return rows.map(modelFromRow);
  }

  async deleteModels(model?: string): Promise<number> {
    return this.write("deleteModels", async (client) => {
      const result =
        model === undefined
          ? await client.query("DELETE FROM models")
          : await client.query("DELETE FROM models WHERE model = $1", [model]);
      return result.rowCount ?? 0;
    });
  }

  async countByState(): Promise<Record<RolloutState, number>> {
    const counts = Object.fromEntries(RolloutStateSchema.options.map((s) => [s, 0])) as Record<RolloutState, number>;
    const sql = "SELECT state, count(*)::integer AS n FROM rollouts GROUP BY state";
    for (const row of await this.read<{ state: RolloutState; n: number }>("countByState", sql)) {
      counts[row.state] = row.n;
    }
    return counts;
  }

  async countEvents(): Promise<number> {
    const [row] = await this.read<{ n: number }>("countEvents", "SELECT count(*)::integer AS n FROM events");
    return row!.n;
  }

  /** Changes on every write here and every notification; while `LISTEN` is down, on every call (nothing cached). */
  revision(): number {
    if (!this.listener.connected) this.revisionCount++;
    return this.revisionCount;
  }

  /** A `SELECT 1` on a pooled connection, not queued behind pending appends (a probe must answer quickly). */
  async ping(): Promise<void> {
    this.assertOpen();
    try {
      await this.pool.query("SELECT 1");
    } catch (err) {
      throw asStoreError(err, "ping");
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.appends.settled();
    this.closed = true;
    await this.pause?.close();
    await this.listener.close();
    await this.pool.end();
  }
}

/** Reads one rollout on `client` (inside a transaction), with an optional row lock clause. */
async function selectRollout(client: pg.ClientBase, rolloutId: string, lock = ""): Promise<Rollout | undefined> {
  const sql = `SELECT ${PG_ROLLOUT_COLUMNS} FROM rollouts WHERE rollout_id = $1 ${lock}`;
  const row = (await client.query<PgRolloutRow>(sql, [rolloutId])).rows[0];
  return row && rolloutFromPgRow(row);
}

/** The URL without an `application_name` query parameter (unchanged when it has none or does not parse). */
function withoutApplicationName(url: string): string {
  if (!url.includes("application_name")) return url;
  try {
    const parsed = new URL(url);
    parsed.searchParams.delete("application_name");
    return parsed.toString();
  } catch {
    return url;
  }
}

/** The URL with any password replaced by `***`, for messages. */
export function redact(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@]*@/, "$1***@");
}
