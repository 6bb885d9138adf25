/** @module A second process holding a SQLite file's write lock until told to let go, as another gateway would. */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";

const REPO_ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/** Takes the lock, prints "locked", and commits (releasing it) when its stdin closes. */
const HOLDER_SOURCE = `
const Database = require("better-sqlite3");
const db = new Database(process.argv[1], { timeout: 30000 });
db.exec("BEGIN IMMEDIATE");
process.stdout.write("locked\\n");
process.stdin.resume();
process.stdin.on("end", () => { db.exec("COMMIT"); db.close(); process.exit(0); });
`;

/** A process holding a SQLite write lock. */
export interface SqliteLockHolder {
  /** The holder's pid. */
  pid: number;
  /** Commits and exits (the lock is free once this resolves). */
  release(): Promise<void>;
}

/** Resolves once a process holds the write lock of the WAL-mode file at `path`. @throws {Error} if it exits first */
export async function holdSqliteLock(path: string): Promise<SqliteLockHolder> {
  const child: ChildProcess = spawn(process.execPath, ["-e", HOLDER_SOURCE, path], {
    cwd: REPO_ROOT,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = once(child, "exit");
  let out = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (chunk) => {
      out += String(chunk);
      if (out.includes("locked")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`lock holder exited (${code}) before taking the lock`)));
  });
  return {
    pid: child.pid!,
    async release() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin!.end();
      await exited;
    },
  };
}
