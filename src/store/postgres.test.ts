import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EventCreateSchema, RolloutCreateSchema, StaleAttempt, StoreUnavailable } from "../protocol/index.js";
import { PostgresServer, skipWithoutPostgres } from "../testing/postgres-server.js";
import { StoreOpenError } from "./errors.js";
import { openStore } from "./open.js";
import { PostgresStore } from "./postgres.js";
import { migratePostgres, PG_LATEST_SCHEMA_VERSION, PG_MIGRATIONS } from "./postgres-migrations.js";
import { runStoreContract } from "./store.contract.js";

const log = (data: Record<string, unknown> = {}, eventId?: string) =>
  EventCreateSchema.parse({ event_type: "log", data, event_id: eventId });
const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** Polls `check` until it is true or `timeoutMs` passed. */
async function until(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return check();
}

describe.skipIf(skipWithoutPostgres())("PostgresStore", () => {
  let server: PostgresServer;
  const open: PostgresStore[] = [];
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server?.stop());
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  /** Two stores (two replicas) on one fresh database. */
  async function replicas(): Promise<[PostgresStore, PostgresStore, string]> {
    const url = await server.createDatabase();
    const [a, b] = await Promise.all([PostgresStore.open(url), PostgresStore.open(url)]);
    open.push(a, b);
    return [a, b, url];
  }

  runStoreContract("PostgresStore", async () => PostgresStore.open(await server.createDatabase()));

  describe("schema", () => {
    it("two gateways opening a fresh database at once migrate it once, to the latest version", async () => {
      const [, , url] = await replicas();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const { rows } = await client.query("SELECT version FROM arclight_schema");
      await client.end();
      expect(rows).toEqual([{ version: PG_LATEST_SCHEMA_VERSION }]);
    });

    it("a database with a newer schema version is refused with StoreOpenError", async () => {
      const url = await server.createDatabase();
      await (await PostgresStore.open(url)).close();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query("UPDATE arclight_schema SET version = 999");
      await client.end();
      await expect(PostgresStore.open(url)).rejects.toThrow(StoreOpenError);
      await expect(PostgresStore.open(url)).rejects.toThrow("schema version 999 is newer");
    });

    it("migrates a version-7 database's tito models: their fields kept, no reasoning parser until registered", async () => {
      const url = await server.createDatabase();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      expect(
        await migratePostgres(
          client,
          PG_MIGRATIONS.filter((m) => m.version <= 7),
        ),
      ).toBe(7);
      await client.query(
        `INSERT INTO models (model, endpoint, version, mode, tokenizer, tool_parser)
         VALUES ('t', 'http://h:1/v1', 2, 'tito', '/m/tok', 'qwen3_coder')`,
      );
      await client.end();
      const store = await PostgresStore.open(url);
      open.push(store);
      const before = { model: "t", endpoint: "http://h:1/v1", version: 2, mode: "tito", tokenizer: "/m/tok" };
      expect(await store.listModels()).toEqual([{ ...before, tool_parser: "qwen3_coder" }]);
      await store.upsertModels([{ model: "t", endpoint: "http://h:1/v1", version: 3, reasoning_parser: "qwen3" }]);
      expect(await store.listModels()).toEqual([
        { ...before, version: 3, tool_parser: "qwen3_coder", reasoning_parser: "qwen3" },
      ]);
    });

    it("openStore opens a postgres:// URL", async () => {
      const store = await openStore(await server.createDatabase());
      expect(store).toBeInstanceOf(PostgresStore);
      await store.close();
    });
  });

  describe("event data", () => {
    it("keeps \\u0000, lone surrogates and key order of event data as sent (json, not jsonb)", async () => {
      const store = await PostgresStore.open(await server.createDatabase());
      open.push(store);
      await store.createRollouts([RolloutCreateSchema.parse({ rollout_id: "r", input: 0 })]);
      const data = { z: "nul \u0000 here", a: "half a pair: \udc00" };
      await store.appendEvents("r", "0", [EventCreateSchema.parse({ event_type: "log", data })]);
      const [stored] = await store.listEvents("r");
      expect(stored!.data).toEqual(data);
      expect(Object.keys(stored!.data)).toEqual(["z", "a"]);
    });
  });

  describe("two replicas on one database", () => {
    it("concurrent appends from both to one rollout leave sequence 1..100 gap-free", async () => {
      const [a, b] = await replicas();
      await a.createRollouts([RolloutCreateSchema.parse({ rollout_id: "r", input: 0 })]);
      await a.patchRollout("r", { status: { state: "running" } });
      // 50 single-event appends per replica, all in flight at once: the two group commits race for the row lock.
      const calls = range(100).map((i) => (i % 2 === 0 ? a : b).appendEvents("r", "0", [log({ i })]));
      const sequences = (await Promise.all(calls)).map((events) => events[0]!.sequence);
      expect(sequences.sort((x, y) => x - y)).toEqual(range(100));
      const stored = await b.listEvents("r");
      expect(stored.map((e) => e.sequence)).toEqual(range(100));
      expect(new Set(stored.map((e) => e.data.i)).size).toBe(100);
    });

    it("the same event_id posted through both at once is stored once", async () => {
      const [a, b] = await replicas();
      await a.createRollouts([RolloutCreateSchema.parse({ rollout_id: "r", input: 0 })]);
      await a.patchRollout("r", { status: { state: "running" } });
      const ids = range(20).map((i) => `e${i}`);
      const results = await Promise.all(
        ids.flatMap((id) => [a, b].map((s) => s.appendEvents("r", "0", [log({}, id)]))),
      );
      expect(await a.countEvents()).toBe(20);
      // Both posts of one id answer the same stored event.
      for (let i = 0; i < results.length; i += 2) expect(results[i]![0]!.sequence).toBe(results[i + 1]![0]!.sequence);
    });

    it("a retry on one replica makes the old attempt stale for appends on the other", async () => {
      const [a, b] = await replicas();
      await a.createRollouts([RolloutCreateSchema.parse({ rollout_id: "r", input: 0, config: { max_attempts: 2 } })]);
      await a.patchRollout("r", { status: { state: "running" } });
      await b.appendEvents("r", "0", [log()]);
      await a.patchRollout("r", { status: { state: "failed" } }); // retried: attempt "1"
      await expect(b.appendEvents("r", "0", [log()])).rejects.toThrow(StaleAttempt);
      await b.patchRollout("r", { status: { state: "running" } });
      expect((await b.appendEvents("r", "1", [log()]))[0]!.sequence).toBe(2);
    });

    it("rollouts finishing on both replicas at once get distinct, increasing terminal positions", async () => {
      const [a, b] = await replicas();
      const ids = range(40).map((i) => `r${i}`);
      await a.createRollouts(ids.map((rollout_id) => RolloutCreateSchema.parse({ rollout_id, input: 0 })));
      // A reader polling the cursor while they finish must see every rollout exactly once.
      const seen: string[] = [];
      let cursor = 0;
      const finishing = Promise.all(
        ids.map((id, i) => (i % 2 ? a : b).patchRollout(id, { status: { state: "failed" } })),
      );
      let done = false;
      void finishing.then(() => (done = true));
      while (!done || seen.length < ids.length) {
        // Taken before the read: an empty page ends the loop only if every finish had committed when it was read.
        const allCommitted = done;
        const page = await (seen.length % 2 ? a : b).listTerminal(cursor, 7);
        seen.push(...page.items.map((item) => item.rollout_id));
        cursor = page.next_after;
        if (allCommitted && page.items.length === 0) break;
      }
      expect(seen.sort()).toEqual([...ids].sort());
    });

    it("replicas opened with an application_name in the URL still see each other's writes", async () => {
      const url = `${await server.createDatabase()}?application_name=shared`;
      const [a, b] = await Promise.all([PostgresStore.open(url), PostgresStore.open(url)]);
      open.push(a, b);
      expect(a.applicationName).not.toBe(b.applicationName);
      const before = b.revision();
      await a.upsertModels([{ model: "m", endpoint: "http://h/v1", version: 1 }]);
      expect(await until(() => b.revision() !== before)).toBe(true);
    });

    it("a write on one replica changes the other's revision; its own appends do not", async () => {
      const [a, b] = await replicas();
      const before = b.revision();
      await a.createRollouts([RolloutCreateSchema.parse({ rollout_id: "r", input: 0 })]);
      expect(await until(() => b.revision() !== before)).toBe(true);
      await a.patchRollout("r", { status: { state: "running" } });
      await until(() => false, 100); // let the patch's notification arrive
      const settled = b.revision();
      await b.appendEvents("r", "0", [log()]);
      await a.appendEvents("r", "0", [log()]);
      await until(() => false, 100);
      expect(b.revision()).toBe(settled);
    });
  });

  describe("connection loss", () => {
    it("after a server restart, calls work again and the revision moved (caches dropped)", async () => {
      const [a] = await replicas();
      await a.createRollouts([RolloutCreateSchema.parse({ rollout_id: "r", input: 0 })]);
      await a.patchRollout("r", { status: { state: "running" } });
      const before = a.revision();
      await server.restart();
      // The pool drops its dead connections: the first calls may fail with StoreUnavailable, never anything else.
      const ok = await until(async () => {
        try {
          await a.appendEvents("r", "0", [log({}, "after-restart")]);
          return true;
        } catch (err) {
          expect(err).toBeInstanceOf(StoreUnavailable);
          return false;
        }
      }, 20_000);
      expect(ok).toBe(true);
      expect(a.revision()).not.toBe(before);
      expect((await a.listEvents("r")).map((e) => e.event_id)).toEqual(["after-restart"]);
    });

    it("while the server is down, writes fail with StoreUnavailable (503) and nothing is acknowledged", async () => {
      const [a] = await replicas();
      await a.createRollouts([RolloutCreateSchema.parse({ rollout_id: "r", input: 0 })]);
      await a.patchRollout("r", { status: { state: "running" } });
      server.halt();
      try {
        const error = await a.appendEvents("r", "0", [log({}, "lost?")]).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StoreUnavailable);
        expect((error as StoreUnavailable).status).toBe(503);
        await expect(a.patchRollout("r", { status: { state: "succeeded" } })).rejects.toThrow(StoreUnavailable);
        // No caching while notifications may be missed (once the LISTEN connection noticed the loss).
        const changesEveryCall = () => {
          const first = a.revision();
          return a.revision() !== first;
        };
        expect(await until(changesEveryCall)).toBe(true);
      } finally {
        server.resume();
      }
      expect(
        await until(
          () =>
            a.getRollout("r").then(
              () => true,
              () => false,
            ),
          20_000,
        ),
      ).toBe(true);
      expect((await a.getRollout("r"))!.status.state).toBe("running");
    });
  });
});
