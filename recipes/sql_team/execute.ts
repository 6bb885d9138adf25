/**
 * @module Runs one SQL query on a SQLite database, read-only, in a worker thread that is terminated when the query
 * passes its time limit (better-sqlite3 is synchronous and has no statement timeout of its own).
 */
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

/** A SQLite value as better-sqlite3 returns it. */
export type SqlValue = number | bigint | string | Buffer | null;

/** What a query gave: its column names and rows, or why it gave none. */
export type QueryResult =
  | { ok: true; columns: string[]; rows: SqlValue[][]; truncated: boolean }
  | { ok: false; error: string };

/** Limits of one execution. */
export interface ExecuteOptions {
  /** Wall-clock limit; the worker is terminated past it. Default 5000. */
  timeoutMs?: number;
  /** Rows kept; a result with more is marked `truncated`. Default 10000. */
  maxRows?: number;
}

// Plain JS run with `eval: true`, so it needs no TypeScript loader in the worker. `readonly` + `fileMustExist`: a
// model's `DROP TABLE` fails instead of changing the benchmark, and a wrong path is an error, not a new empty file.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
parentPort.on("message", ({ id, path, sql, maxRows }) => {
  let db;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    const statement = db.prepare(sql);
    if (!statement.reader) throw new Error("not a query: the statement returns no rows");
    const columns = statement.columns().map((c) => c.name);
    const rows = [];
    let truncated = false;
    for (const row of statement.raw(true).iterate()) {
      if (rows.length === maxRows) { truncated = true; break; }
      rows.push(row);
    }
    parentPort.postMessage({ id, result: { ok: true, columns, rows, truncated } });
  } catch (err) {
    parentPort.postMessage({ id, result: { ok: false, error: String(err && err.message ? err.message : err) } });
  } finally {
    if (db) db.close();
  }
});
`;

/** The better-sqlite3 entry the worker requires: this module's own, whatever the worker's working directory. */
const DRIVER = fileURLToPath(import.meta.resolve("better-sqlite3"));

/**
 * Runs queries one after another on a worker thread. A timeout or a crash retires the worker (terminated, so a
 * runaway query stops); the next query starts a new one. The worker is unref'd: it never keeps a process alive.
 */
export class QueryRunner {
  private worker: Worker | undefined;
  private nextId = 0;
  /** Queries run one at a time: a timeout terminates the worker, which must not take another query with it. */
  private queue: Promise<unknown> = Promise.resolve();

  /**
   * Executes `sql` on the database at `path`, after the queries already queued here.
   * @param path - a `.sqlite` file (opened read-only; must exist)
   * @param sql - one statement that returns rows
   * @param options - time limit (ms) and row cap
   * @returns see {@link executeQuery}
   */
  run(path: string, sql: string, options: ExecuteOptions = {}): Promise<QueryResult> {
    const run = this.queue.then(() =>
      this.runOnWorker(path, sql, options.timeoutMs ?? 5000, options.maxRows ?? 10_000),
    );
    this.queue = run;
    return run;
  }

  private startWorker(): Worker {
    const started = new Worker(WORKER_SOURCE, { eval: true, workerData: { driver: DRIVER } });
    started.unref();
    return started;
  }

  private runOnWorker(path: string, sql: string, timeoutMs: number, maxRows: number): Promise<QueryResult> {
    this.worker ??= this.startWorker();
    const current = this.worker;
    const id = this.nextId++;
    return new Promise<QueryResult>((resolve) => {
      const settle = (result: QueryResult) => {
        clearTimeout(timer);
        current.off("message", onMessage);
        current.off("error", onError);
        current.off("exit", onExit);
        resolve(result);
      };
      const retire = () => {
        if (this.worker === current) this.worker = undefined;
        void current.terminate();
      };
      const timer = setTimeout(() => {
        retire();
        settle({ ok: false, error: `timed out after ${timeoutMs} ms` });
      }, timeoutMs);
      const onMessage = (message: { id: number; result: QueryResult }) => {
        if (message.id === id) settle(message.result);
      };
      const onError = (err: Error) => {
        retire();
        settle({ ok: false, error: err.message });
      };
      const onExit = (code: number) => {
        retire();
        settle({ ok: false, error: `query worker exited with code ${code}` });
      };
      current.on("message", onMessage);
      current.once("error", onError);
      current.once("exit", onExit);
      current.postMessage({ id, path, sql, maxRows });
    });
  }
}

/** The runner of {@link executeQuery}: one per process, so an agent starts one worker for all its queries. */
const shared = new QueryRunner();

/**
 * Executes `sql` on the database at `path` on this process's shared {@link QueryRunner}.
 * @param path - a `.sqlite` file (opened read-only; must exist)
 * @param sql - one statement that returns rows
 * @param options - time limit (ms) and row cap
 * @returns the columns and rows, or `{ ok: false, error }` for a SQL error, a missing file, a statement that returns
 *   no rows, or `timed out after N ms` (the worker running it is terminated and the next query starts a new one)
 */
export function executeQuery(path: string, sql: string, options: ExecuteOptions = {}): Promise<QueryResult> {
  return shared.run(path, sql, options);
}
