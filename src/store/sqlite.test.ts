import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { EventCreateSchema, RolloutCreateSchema, StaleAttempt } from "../protocol/index.js";
import { StoreOpenError } from "./errors.js";
import { CROSS_PROCESS_POLL_MS, SqliteStore } from "./sqlite.js";
import { LATEST_SCHEMA_VERSION, MIGRATIONS, migrate } from "./sqlite-migrations.js";
import { runStoreContract } from "./store.contract.js";

const dir = mkdtempSync(join(tmpdir(), "arclight-sqlite-"));
let fileNo = 0;
/** A fresh database path in this suite's temp dir (in a sub-folder, to exercise parent creation). */
function dbPath(): string {
  return join(dir, `sub-${++fileNo}`, "store.db");
}
afterAll(() => rmSync(dir, { recursive: true, force: true }));

runStoreContract("SqliteStore", () => SqliteStore.open(dbPath()));

const log = (data: Record<string, unknown> = {}, eventId?: string) =>
  EventCreateSchema.parse({ event_type: "log", data, event_id: eventId });
const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe("SqliteStore file behaviour", () => {
  it("opens the file in WAL mode with synchronous=NORMAL and the latest schema version", async () => {
    const path = dbPath();
    await SqliteStore.open(path).close();
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(raw.pragma("user_version", { simple: true })).toBe(LATEST_SCHEMA_VERSION);
    raw.close();
    const store = SqliteStore.open(path, { synchronous: "FULL" });
    await store.close();
  });

  it("reopening the same file keeps rollouts, events, attempts, the terminal cursor and models", async () => {
    const path = dbPath();
    const first = SqliteStore.open(path);
    await first.createRollouts(
      ["a", "b", "c"].map((id) =>
        RolloutCreateSchema.parse({ rollout_id: id, input: { id }, config: { max_attempts: 2 } }),
      ),
    );
    await first.patchRollout("a", { status: { state: "running" } });
    await first.appendEvents("a", "0", [log({ n: 1 }, "e1"), log({ n: 2 })]);
    await first.patchRollout("a", { status: { state: "failed" } }); // retried: attempt "1"
    await first.patchRollout("b", { status: { state: "failed" } });
    await first.patchRollout("c", { status: { state: "failed" } });
    await first.deleteRollout("c"); // its terminal position must stay unused after reopening
    await first.upsertModels([{ model: "m", endpoint: "http://h:1/v1", version: 4 }]);
    const before = {
      rollouts: await first.listRollouts(),
      events: await first.listEvents("a"),
      terminal: await first.listTerminal(0, 10),
      models: await first.listModels(),
    };
    await first.close();

    const second = SqliteStore.open(path);
    expect(await second.listRollouts()).toEqual(before.rollouts);
    expect(await second.listEvents("a")).toEqual(before.events);
    expect(await second.listTerminal(0, 10)).toEqual(before.terminal);
    expect(await second.listModels()).toEqual(before.models);
    await expect(second.appendEvents("a", "0", [log()])).rejects.toThrow(StaleAttempt);
    // event_id dedupe and the sequence counter both survive the reopen.
    expect(await second.appendEvents("a", "1", [log({}, "e1")])).toEqual([before.events[0]]);
    expect((await second.appendEvents("a", "1", [log()]))[0]!.sequence).toBe(3);
    await second.patchRollout("a", { status: { state: "running" } });
    await second.patchRollout("a", { status: { state: "failed" } });
    const page = await second.listTerminal(before.terminal.next_after, 10);
    expect(page.items.map((i) => i.rollout_id)).toEqual(["a"]);
    // Positions 1 (b) and 2 (c, deleted) were used; the next one is 3, never 2 again.
    expect(page.next_after).toBe(3);
    await second.close();
  });

  it("a second OS process writing the same file at the same time corrupts nothing", async () => {
    const path = dbPath();
    const store = SqliteStore.open(path);
    await store.createRollouts([RolloutCreateSchema.parse({ rollout_id: "shared", input: 0 })]);
    await store.patchRollout("shared", { status: { state: "running" } });
    const perSide = 400;
    const child = spawnWriter(path, "shared", perSide, "child");
    // Listen for the exit now: when this process is the slower writer, the child exits before the loop below ends.
    const exited = once(child, "exit");
    try {
      await waitForLine(child, "ready");
      child.stdin!.write("go\n");
      // Start once the child is writing, so both processes contend for the write lock (measured while writing this
      // test: the two sides' events alternate 9-35 times in the shared sequence; not asserted, as scheduling varies).
      await waitForLine(child, "started");
      for (let i = 0; i < perSide; i++) {
        await store.appendEvents("shared", "0", [log({ tag: "parent", i }, `parent-${i}`)]);
        if (i % 10 === 0) {
          await store.createRollouts([RolloutCreateSchema.parse({ rollout_id: `parent-own-${i}`, input: { i } })]);
          await store.patchRollout(`parent-own-${i}`, { status: { state: "failed" } });
        }
      }
      const [code] = await exited;
      expect(code, childStderr.get(child)).toBe(0);
    } finally {
      child.kill();
    }
    const stored = await store.listEvents("shared");
    expect(stored.map((e) => e.sequence)).toEqual(range(2 * perSide));
    for (const tag of ["parent", "child"]) {
      const mine = stored.filter((e) => e.data.tag === tag).map((e) => e.data.i);
      expect(mine).toEqual(range(perSide).map((i) => i - 1)); // each side's events all present, in its own order
    }
    const terminal = await store.listTerminal(0, 1000);
    expect(terminal.total_terminal).toBe(2 * (perSide / 10));
    expect(new Set(terminal.items.map((i) => i.rollout_id)).size).toBe(terminal.total_terminal);
    await store.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
    expect(raw.pragma("foreign_key_check")).toEqual([]);
    raw.close();
  });

  it("three processes opening a fresh file at once migrate it once, then write without loss", async () => {
    const path = dbPath();
    const writers = ["w1", "w2", "w3"].map((tag) => spawnWriter(path, "shared", 40, tag));
    try {
      // All three open (WAL switch + migrations) concurrently on a file that does not exist yet.
      await Promise.all(writers.map((w) => waitForLine(w, "ready")));
      const store = SqliteStore.open(path);
      await store.createRollouts([RolloutCreateSchema.parse({ rollout_id: "shared", input: 0 })]);
      await store.patchRollout("shared", { status: { state: "running" } });
      for (const w of writers) w.stdin!.write("go\n");
      const codes = await Promise.all(writers.map(async (w) => (await once(w, "exit"))[0]));
      expect(codes, writers.map((w) => childStderr.get(w)).join("\n")).toEqual([0, 0, 0]);
      const stored = await store.listEvents("shared");
      expect(stored.map((e) => e.sequence)).toEqual(range(120));
      expect(new Set(stored.map((e) => e.event_id)).size).toBe(120);
      await store.close();
    } finally {
      for (const w of writers) w.kill();
    }
  });

  it("a process killed with SIGKILL after its writes returned loses none of them", async () => {
    const path = dbPath();
    const setup = SqliteStore.open(path);
    await setup.createRollouts([RolloutCreateSchema.parse({ rollout_id: "r1", input: 0 })]);
    await setup.patchRollout("r1", { status: { state: "running" } });
    await setup.close();
    const child = spawnWriter(path, "r1", 60, "doomed", "crash");
    await waitForLine(child, "ready");
    child.stdin!.write("go\n");
    const [code, signal] = await once(child, "exit");
    expect([code, signal], childStderr.get(child)).toEqual([null, "SIGKILL"]);
    const store = SqliteStore.open(path);
    expect((await store.listEvents("r1")).map((e) => e.data.i)).toEqual(range(60).map((i) => i - 1));
    expect((await store.listTerminal(0, 100)).total_terminal).toBe(6);
    await store.close();
  });

  it("revision changes within CROSS_PROCESS_POLL_MS of another connection's commit to the same file", async () => {
    const path = dbPath();
    const store = SqliteStore.open(path);
    const other = SqliteStore.open(path);
    const before = store.revision();
    expect(store.revision()).toBe(before);
    await other.upsertModels([{ model: "m", endpoint: "http://h/v1", version: 2 }]);
    // A timer may fire a little before its delay by performance.now(): libuv counts from the loop's cached clock.
    await sleep(CROSS_PROCESS_POLL_MS + 2);
    const after = store.revision();
    expect(after).not.toBe(before);
    expect(store.revision()).toBe(after);
    // This connection's own write counts at once.
    await store.upsertModels([{ model: "m", endpoint: "http://h/v1", version: 3 }]);
    expect(store.revision()).not.toBe(after);
    await Promise.all([store.close(), other.close()]);
  });

  it("group commit: an append resolves only once another connection can read it", async () => {
    const path = dbPath();
    const store = SqliteStore.open(path);
    const other = SqliteStore.open(path);
    await store.createRollouts([RolloutCreateSchema.parse({ rollout_id: "a", input: 0 })]);
    await store.patchRollout("a", { status: { state: "running" } });
    const appended = await Promise.all(range(30).map((n) => store.appendEvents("a", "0", [log({ n })])));
    expect(appended.map(([e]) => e!.sequence)).toEqual(range(30));
    expect((await other.listEvents("a")).map((e) => e.data.n)).toEqual(range(30));
    await Promise.all([store.close(), other.close()]);
  });

  it("group commit: an INSERT failing inside a shared batch undoes only its own caller's rows", async () => {
    const path = dbPath();
    const store = SqliteStore.open(path);
    const ids = ["a", "b", "c", "d"];
    await store.createRollouts(ids.map((id) => RolloutCreateSchema.parse({ rollout_id: id, input: 0 })));
    for (const id of ids) await store.patchRollout(id, { status: { state: "running" } });
    // A trigger makes the INSERT itself fail, after every check has passed (a one-event append has no savepoint).
    const raw = new Database(path);
    raw.exec(`CREATE TRIGGER boom BEFORE INSERT ON events WHEN NEW.data LIKE '%boom%'
      BEGIN SELECT RAISE(ABORT, 'boom refused'); END`);
    raw.close();
    const settled = await Promise.allSettled([
      store.appendEvents("a", "0", [log({ n: 1 })]),
      store.appendEvents("b", "0", [log({ boom: true })]),
      store.appendEvents("c", "0", [log({ n: 2 }), log({ boom: true })]),
      store.appendEvents("d", "0", [log({ n: 3 })]),
    ]);
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect((await store.listEvents("a")).map((e) => e.data.n)).toEqual([1]);
    expect(await store.listEvents("b")).toEqual([]);
    expect(await store.listEvents("c")).toEqual([]); // its first event was rolled back with its savepoint
    expect((await store.listEvents("d")).map((e) => e.data.n)).toEqual([3]);
    expect((await store.appendEvents("b", "0", [log({ n: 4 })]))[0]!.sequence).toBe(1);
    await store.close();
  });

  it("group commit keeps call order: an append called before a finishing patch lands; close commits the queue", async () => {
    const path = dbPath();
    const store = SqliteStore.open(path);
    await store.createRollouts([RolloutCreateSchema.parse({ rollout_id: "a", input: 0 })]);
    await store.patchRollout("a", { status: { state: "running" } });
    // Neither awaited before the next call: the queued append must commit before the patch applies.
    const first = store.appendEvents("a", "0", [log({ n: 1 })]);
    const patched = store.patchRollout("a", { status: { state: "succeeded" } });
    const late = store.appendEvents("a", "0", [log({ n: 2 })]);
    expect(await first).toMatchObject([{ sequence: 1 }]);
    expect((await first)[0]!.late).toBeUndefined();
    expect((await patched).status.state).toBe("succeeded");
    expect(await late).toMatchObject([{ sequence: 2, late: true }]);
    await store.createRollouts([RolloutCreateSchema.parse({ rollout_id: "b", input: 0 })]);
    await store.patchRollout("b", { status: { state: "running" } });
    const queued = store.appendEvents("b", "0", [log({ n: 3 })]);
    await store.close();
    expect((await queued)[0]!.sequence).toBe(1);
    const reopened = SqliteStore.open(path);
    expect((await reopened.listEvents("b")).map((e) => e.data.n)).toEqual([3]);
    await reopened.close();
  });

  it("migrates an old-version file, keeping its data and backfilling attempts", async () => {
    const path = dbPath();
    SqliteStore.open(path); // creates the folder; replaced below by a v1 file
    rmSync(path);
    const v1 = new Database(path);
    expect(migrate(v1, MIGRATIONS.slice(0, 1))).toBe(1);
    v1.prepare(
      `INSERT INTO rollouts (rollout_id, input, data_id, is_train, config, metadata, state, last_attempt_id, version,
       created_at, updated_at) VALUES ('old', '{"data_id":"d"}', 'd', 1, '{"timeout_seconds":3600,"max_attempts":2}',
       '{}', 'running', '0', 2, 1.5, 2.5)`,
    ).run();
    v1.prepare(
      `INSERT INTO events (rollout_id, sequence, attempt_id, event_type, timestamp, data, event_id)
       VALUES ('old', 1, '0', 'log', 2.0, '{"n":1}', NULL)`,
    ).run();
    v1.close();

    const store = SqliteStore.open(path);
    expect((await store.getRollout("old"))!.status).toMatchObject({ state: "running", version: 2, created_at: 1.5 });
    expect(await store.listEvents("old", { attemptId: "0" })).toHaveLength(1);
    await store.patchRollout("old", { status: { state: "failed" } });
    // Attempt "0" came from the backfill: naming it now is stale.
    await expect(store.patchRollout("old", { status: { last_attempt_id: "0" } })).rejects.toThrow(StaleAttempt);
    await store.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.pragma("user_version", { simple: true })).toBe(LATEST_SCHEMA_VERSION);
    raw.close();
  });

  it("migrates a version-5 file's tito models: their fields kept, no reasoning parser until one is registered", async () => {
    const path = dbPath();
    SqliteStore.open(path); // creates the folder; replaced below by a v5 file
    rmSync(path);
    const v5 = new Database(path);
    expect(
      migrate(
        v5,
        MIGRATIONS.filter((m) => m.version <= 5),
      ),
    ).toBe(5);
    v5.prepare(
      `INSERT INTO models (model, endpoint, version, mode, tokenizer, tool_parser)
       VALUES ('t', 'http://h:1/v1', 2, 'tito', '/m/tok', 'qwen3_coder')`,
    ).run();
    v5.close();

    const store = SqliteStore.open(path);
    const before = { model: "t", endpoint: "http://h:1/v1", version: 2, mode: "tito", tokenizer: "/m/tok" };
    expect(await store.listModels()).toEqual([{ ...before, tool_parser: "qwen3_coder" }]);
    await store.upsertModels([{ model: "t", endpoint: "http://h:1/v1", version: 3, reasoning_parser: "qwen3" }]);
    expect(await store.listModels()).toEqual([
      { ...before, version: 3, tool_parser: "qwen3_coder", reasoning_parser: "qwen3" },
    ]);
    await store.close();
  });

  it("refuses a file whose schema is newer than this build", async () => {
    const path = dbPath();
    await SqliteStore.open(path).close();
    const raw = new Database(path);
    raw.pragma(`user_version = ${LATEST_SCHEMA_VERSION + 1}`);
    raw.close();
    expect(() => SqliteStore.open(path)).toThrow(StoreOpenError);
    expect(() => SqliteStore.open(path)).toThrow(/newer than this arclight supports/);
  });

  it("a file that is not a SQLite database gives a clear error and is left untouched", () => {
    const path = join(dir, "not-a-db.db");
    const text = "this is a text file, not a database\n".repeat(200);
    writeFileSync(path, text);
    expect(() => SqliteStore.open(path)).toThrow(StoreOpenError);
    expect(() => SqliteStore.open(path)).toThrow(`cannot open SQLite store ${path}: file is not a database`);
    expect(readFileSync(path, "utf8")).toBe(text);
  });
});

const childStderr = new WeakMap<ChildProcess, string>();
const writerScript = fileURLToPath(new URL("./testing/sqlite-writer.ts", import.meta.url));

/** Starts `testing/sqlite-writer.ts` in a new Node process (real OS process, its own SQLite connection). */
function spawnWriter(path: string, rolloutId: string, count: number, tag: string, mode = ""): ChildProcess {
  const args = ["--import", "tsx", writerScript, path, rolloutId, String(count), tag, mode];
  const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "pipe"] });
  childStderr.set(child, "");
  child.stderr!.on("data", (chunk: Buffer) => childStderr.set(child, childStderr.get(child) + chunk.toString()));
  return child;
}

/** Resolves when the child prints `line`; rejects if it exits first. */
function waitForLine(child: ChildProcess, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.split("\n").includes(line)) resolve();
    });
    child.once("exit", (code) =>
      reject(new Error(`writer exited ${code} before "${line}": ${childStderr.get(child)}`)),
    );
  });
}
