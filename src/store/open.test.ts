import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { StoreOpenError } from "./errors.js";
import { MemoryStore } from "./memory.js";
import { openStore } from "./open.js";
import { SqliteStore } from "./sqlite.js";

const dir = mkdtempSync(join(tmpdir(), "arclight-open-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("openStore", () => {
  it("opens a memory store for 'memory'", async () => {
    const store = await openStore("memory");
    expect(store).toBeInstanceOf(MemoryStore);
    await store.close();
  });

  it("opens a SQLite file for 'sqlite:PATH', creating parent folders", async () => {
    const path = join(dir, "a", "b", "gateway.db");
    const store = await openStore(`sqlite:${path}`);
    expect(store).toBeInstanceOf(SqliteStore);
    await store.upsertModels([{ model: "m", endpoint: "http://h:1/v1", version: 0 }]);
    await store.close();
    expect(existsSync(path)).toBe(true);
    const again = await openStore(`sqlite:${path}`);
    expect(await again.listModels()).toHaveLength(1);
    await again.close();
  });

  it("says why SQLite cannot open a folder given as the file", async () => {
    await expect(openStore(`sqlite:${dir}`)).rejects.toThrow(
      `cannot open SQLite store ${dir}: unable to open database file (it is a folder: give a file path inside it)`,
    );
  });

  it("rejects an unknown spec or an empty path, naming the spec and what is accepted", async () => {
    await expect(openStore("mysql://x")).rejects.toThrow(StoreOpenError);
    await expect(openStore("mysql://x")).rejects.toThrow(
      'unknown store spec "mysql://x"; expected memory | sqlite:PATH | postgres://USER@HOST:PORT/DB',
    );
    await expect(openStore("sqlite:")).rejects.toThrow('store spec "sqlite:" names no file');
    await expect(openStore("Memory")).rejects.toThrow(StoreOpenError);
  });

  it("a PostgreSQL URL nobody answers fails with StoreOpenError naming the URL, password hidden", async () => {
    // Port 1 on loopback: connection refused at once.
    const open = openStore("postgres://me:secret@127.0.0.1:1/db");
    await expect(open).rejects.toThrow(StoreOpenError);
    await expect(open).rejects.toThrow("cannot open PostgreSQL store postgres://me:***@127.0.0.1:1/db:");
  });

  it("a path that is a folder fails with StoreOpenError naming the path", async () => {
    await expect(openStore(`sqlite:${dir}`)).rejects.toThrow(`cannot open SQLite store ${dir}:`);
  });
});
