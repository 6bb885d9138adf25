/**
 * @module A throw-away PostgreSQL server (`initdb` + `pg_ctl` on a free loopback port; through `runuser` as root,
 * since PostgreSQL refuses root). Debian's PostgreSQL 15 binaries or `ARCLIGHT_PG_BIN`.
 */
import { execFile, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { skipWithout } from "./requirement.js";

/** Where the server binaries are looked for: `ARCLIGHT_PG_BIN`, else Debian's layout for 17, 16 and 15. */
export function postgresBinDir(): string | null {
  const candidates = [process.env.ARCLIGHT_PG_BIN, ...[17, 16, 15].map((v) => `/usr/lib/postgresql/${v}/bin`)];
  for (const dir of candidates) if (dir && existsSync(join(dir, "pg_ctl"))) return dir;
  return null;
}

/** Whether PostgreSQL tests are skipped. @throws {Error} under `CI=true` when the binaries are missing */
export function skipWithoutPostgres(): boolean {
  return skipWithout({
    name: "PostgreSQL server binaries (the PostgreSQL store)",
    missing: () =>
      postgresBinDir() === null ? "no pg_ctl in ARCLIGHT_PG_BIN or /usr/lib/postgresql/{17,16,15}/bin" : null,
    howToGet: "apt-get install postgresql-15 (as .ci/run does), or set ARCLIGHT_PG_BIN to the folder that holds pg_ctl",
  });
}

/** Options of {@link startPostgres}. */
export interface PostgresServerOptions {
  /** `fsync=off`: safe against a killed server, not an OS crash. Default true; benchmarks pass false. */
  fast?: boolean;
}

/** Asks the OS for a free loopback TCP port. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address !== "object") throw new Error("no port");
  return address.port;
}

/** The uid and gid of the `postgres` account, or null when there is none. */
function postgresAccount(): { uid: number; gid: number } | null {
  try {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    return { uid, gid };
  } catch {
    return null;
  }
}

/** A running test server; {@link stop} shuts it down and removes its files. */
export class PostgresServer {
  private databases = 0;

  private constructor(
    private readonly bin: string,
    /** The folder holding the data directory. */
    readonly dir: string,
    /** TCP port on 127.0.0.1. */
    readonly port: number,
    private readonly asPostgres: boolean,
  ) {}

  /** Starts a fresh cluster. @throws {Error} when the binaries are missing or `initdb`/`pg_ctl` fail */
  static async start(options: PostgresServerOptions = {}): Promise<PostgresServer> {
    const bin = postgresBinDir();
    if (bin === null) throw new Error("no PostgreSQL server binaries (set ARCLIGHT_PG_BIN)");
    const dir = mkdtempSync(join(tmpdir(), "arclight-pg-"));
    const asPostgres = process.getuid?.() === 0;
    if (asPostgres) {
      const account = postgresAccount();
      if (account === null) throw new Error("running as root but there is no postgres account to run the server");
      chownSync(dir, account.uid, account.gid);
    }
    const server = new PostgresServer(bin, dir, await freePort(), asPostgres);
    server.run("initdb", ["-D", server.dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
    const fast = options.fast ?? true;
    const settings = [
      `-p ${server.port}`,
      "-c listen_addresses=127.0.0.1",
      `-c unix_socket_directories=${dir}`,
      "-c max_connections=200",
      ...(fast ? ["-c fsync=off", "-c full_page_writes=off"] : []),
    ];
    server.start(settings.join(" "));
    return server;
  }

  private get dataDir(): string {
    return join(this.dir, "data");
  }

  private run(tool: string, args: readonly string[]): void {
    const exe = join(this.bin, tool);
    const argv = this.asPostgres ? ["runuser", "-u", "postgres", "--", exe, ...args] : [exe, ...args];
    execFileSync(argv[0]!, argv.slice(1), { stdio: ["ignore", "ignore", "pipe"], cwd: this.dir });
  }

  /** {@link run} without blocking the event loop, so clients in this process keep running meanwhile. */
  private async runAsync(tool: string, args: readonly string[]): Promise<void> {
    const exe = join(this.bin, tool);
    const argv = this.asPostgres ? ["runuser", "-u", "postgres", "--", exe, ...args] : [exe, ...args];
    await promisify(execFile)(argv[0]!, argv.slice(1), { cwd: this.dir });
  }

  private startOptions = "";

  private start(options: string): void {
    this.startOptions = options;
    this.run("pg_ctl", ["start", "-w", "-D", this.dataDir, "-l", join(this.dir, "server.log"), "-o", options]);
  }

  /** URL of the `postgres` database (superuser, trust auth). */
  get adminUrl(): string {
    return this.urlOf("postgres");
  }

  /** @returns the connection URL of database `name` */
  urlOf(name: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${name}`;
  }

  /** Creates an empty database with a fresh name. @returns its connection URL */
  async createDatabase(): Promise<string> {
    const name = `t${process.pid}_${++this.databases}`;
    const client = new pg.Client({ connectionString: this.adminUrl });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE ${name}`);
    } finally {
      await client.end();
    }
    return this.urlOf(name);
  }

  /** Stops the server (`-m fast` cuts connections), stays down `downMs`, restarts on the same port and data. */
  async restart(downMs = 0): Promise<void> {
    await this.runAsync("pg_ctl", ["stop", "-w", "-m", "fast", "-D", this.dataDir]);
    await new Promise((resolve) => setTimeout(resolve, downMs));
    const log = join(this.dir, "server.log");
    await this.runAsync("pg_ctl", ["start", "-w", "-D", this.dataDir, "-l", log, "-o", this.startOptions]);
  }

  /** Stops the server (`-m immediate`) without removing anything; {@link resume} starts it again. */
  halt(): void {
    this.run("pg_ctl", ["stop", "-w", "-m", "immediate", "-D", this.dataDir]);
  }

  /** Starts a halted server again on the same port. */
  resume(): void {
    this.start(this.startOptions);
  }

  /** Stops the server and removes its files; safe to call twice. */
  stop(): void {
    if (!existsSync(this.dir)) return;
    try {
      this.run("pg_ctl", ["stop", "-w", "-m", "immediate", "-D", this.dataDir]);
    } catch {
      // Already stopped (a test halted it): removing the files is all that is left.
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
