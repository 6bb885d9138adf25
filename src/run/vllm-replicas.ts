/**
 * @module vLLM replicas arclight starts and watches (`engine.vllm.launch`): each one a `vllm serve` process in its own
 * process group, up once `GET /health` answers 200 (vLLM's liveness route), restarted when it exits on its own (at most
 * `max_restarts` times, waiting `restart_backoff_seconds` × 2^(k−1) before the k-th restart), and stopped with its
 * whole group (SIGTERM, then SIGKILL after a grace period) when the run ends: normally, on an error, or on an
 * interrupt (the stack's stops), and, as a last resort, when arclight's process exits without stopping them.
 *
 * A restarted replica is given the weights of the current policy version at start (its command is built again at
 * each start), so it never answers with an older version than the one the gateway has registered.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createWriteStream, type WriteStream } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import type { Logger } from "pino";
import { request } from "undici";
import { killGroup } from "../controller/local.js";
import { LogTail } from "../controller/log-tail.js";
import type { VllmLaunch } from "../trainer/config.js";
import { VllmSamplerError } from "../trainer/vllm-serving.js";
import type { ReplicaCommand } from "./vllm-command.js";

/** What {@link VllmReplicas.start} needs. */
export interface VllmReplicasOptions {
  launch: VllmLaunch;
  /** Processes to start. */
  replicas: number;
  /** The command of replica `index` on `port`, built at every start (a restart gets the current weights). */
  command: (index: number, port: number) => ReplicaCommand;
  logger: Logger;
  /** Folder for each replica's output, `vllm-INDEX.log` (appended across restarts); null: kept in memory only. */
  logDir: string | null;
  /** Grace between SIGTERM and SIGKILL when stopping (ms); default 10,000. */
  stopGraceMs?: number;
  /** Aborting it while the replicas start stops them (an interrupt need not wait for a model to load). */
  signal?: AbortSignal;
}

/** Bytes of a replica's output kept for error messages. */
const TAIL_BYTES = 4096;
/** How often `/health` is polled while a replica starts (ms). */
const HEALTH_POLL_MS = 250;

/** One replica: its port, its current process, and where it stands. */
interface Replica {
  index: number;
  port: number;
  child: ChildProcess | null;
  tail: LogTail;
  restarts: number;
  state: "starting" | "up" | "failed";
  /** Callers of `ready` waiting for this replica. */
  waiters: { resolve: () => void; reject: (err: unknown) => void }[];
  /** Why it gave up (state failed). */
  failure: VllmSamplerError | null;
}

/** How a process ended: exit code, signal, or a spawn error. */
interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

/** A free TCP port on `host` (bound and released; vLLM binds it a moment later). */
async function freePort(host: string): Promise<number> {
  const server = createServer();
  server.listen(0, host);
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The host to call a replica on: a wildcard bind is reached over loopback. */
function callHost(host: string): string {
  return host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
}

/** The last lines of a replica's output, for an error message. */
function tailOf(replica: Replica): string {
  const text = replica.tail.text().trim();
  return text === "" ? "(no output)" : text.split("\n").slice(-15).join("\n");
}

/** The running replicas of one run. */
export class VllmReplicas {
  private stopping = false;
  private readonly logs: WriteStream[] = [];

  private constructor(
    private readonly options: VllmReplicasOptions,
    private readonly replicas: Replica[],
  ) {}

  /**
   * Starts every replica and waits until each answers `GET /health` 200.
   * @param options - launch settings, replica count, command builder, logger, log folder
   * @returns the running replicas
   * @throws {VllmSamplerError} when a replica exits before it is healthy or is not healthy within
   *   `health_timeout_seconds`, naming the replica, its command and the tail of its output; every replica
   *   started is stopped first
   */
  static async start(options: VllmReplicasOptions): Promise<VllmReplicas> {
    const { launch } = options;
    const replicas: Replica[] = [];
    for (let index = 0; index < options.replicas; index++) {
      const port = launch.port === 0 ? await freePort(launch.host) : launch.port + index;
      const tail = new LogTail(TAIL_BYTES);
      replicas.push({ index, port, child: null, tail, restarts: 0, state: "starting", waiters: [], failure: null });
    }
    const running = new VllmReplicas(options, replicas);
    for (const replica of replicas) running.launch(replica);
    const onAbort = () => void running.stop();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      options.signal?.throwIfAborted();
      await running.ready();
    } catch (err) {
      await running.stop();
      throw err;
    } finally {
      options.signal?.removeEventListener("abort", onAbort);
    }
    return running;
  }

  /** Each replica's OpenAI base URL, `http://HOST:PORT/v1`, in replica order. */
  get endpoints(): string[] {
    const host = callHost(this.options.launch.host);
    return this.replicas.map((r) => `http://${host}:${r.port}/v1`);
  }

  /** Process ids of the replicas' current processes (null while one restarts), for tests and logs. */
  get pids(): (number | null)[] {
    return this.replicas.map((r) => r.child?.pid ?? null);
  }

  /**
   * Waits until every replica is up (one being restarted is waited for).
   * @throws {VllmSamplerError} when a replica has given up
   */
  async ready(): Promise<void> {
    await Promise.all(this.replicas.map((r) => this.whenUp(r)));
  }

  private whenUp(replica: Replica): Promise<void> {
    if (replica.state === "up") return Promise.resolve();
    if (replica.state === "failed") return Promise.reject(replica.failure);
    return new Promise((resolve, reject) => replica.waiters.push({ resolve, reject }));
  }

  /** Stops every replica's process group (SIGTERM, SIGKILL after the grace period); later calls do nothing more. */
  async stop(): Promise<void> {
    this.stopping = true;
    const stopped = new VllmSamplerError("vLLM replicas stopped");
    for (const replica of this.replicas) if (replica.state === "starting") this.fail(replica, stopped);
    const graceMs = this.options.stopGraceMs ?? 10_000;
    await Promise.all(this.replicas.map((r) => stopChild(r.child, graceMs)));
    for (const log of this.logs.splice(0)) log.end();
  }

  /** Spawns replica `replica`, then marks it up once healthy; its exit leads to a restart or to giving up. */
  private launch(replica: Replica): void {
    const { argv, env } = this.options.command(replica.index, replica.port);
    const [exe, ...args] = argv;
    const log = this.logFor(replica);
    replica.state = "starting";
    const child = spawn(exe!, args, {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    replica.child = child;
    const onData = (chunk: Buffer) => {
      replica.tail.push(chunk);
      log?.write(chunk);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    // arclight exiting without stopping it (a second Ctrl-C exits at once): kill the group on the way out.
    const onParentExit = () => {
      if (child.pid !== undefined) killGroup(child.pid, "SIGKILL");
    };
    process.on("exit", onParentExit);
    const exited = new Promise<Exit>((resolve) => {
      child.once("error", (error) => resolve({ code: null, signal: null, error }));
      child.once("exit", (code, signal) => resolve({ code, signal }));
    });
    let startError: string | null = null;
    void exited.then((how) => {
      process.off("exit", onParentExit);
      if (replica.child === child) replica.child = null;
      // What the leader forked (vLLM's engine core, its workers) must not keep the GPU for the next start.
      if (child.pid !== undefined) killGroup(child.pid, "SIGKILL");
      if (!this.stopping) this.onExit(replica, argv, how, startError);
    });
    this.waitHealthy(replica, exited).then(
      (healthy) => {
        if (!healthy) return;
        replica.state = "up";
        this.options.logger.info({ replica: replica.index, port: replica.port, pid: child.pid }, "vLLM replica up");
        for (const waiter of replica.waiters.splice(0)) waiter.resolve();
      },
      (err: Error) => {
        startError = err.message;
        if (child.pid !== undefined) killGroup(child.pid, "SIGKILL");
      },
    );
  }

  /** A replica's process ended on its own: a first start that failed gives up; else restart, within the limit. */
  private onExit(replica: Replica, argv: readonly string[], how: Exit, startError: string | null): void {
    const { launch, logger } = this.options;
    const exit =
      startError ??
      (how.error !== undefined
        ? `could not start: ${how.error.message}`
        : `exited (${how.signal ?? `code ${how.code}`})`);
    const what = `vLLM replica ${replica.index} (port ${replica.port})`;
    if (replica.state !== "up" && replica.restarts === 0) {
      const message = `${what} ${exit} before GET /health answered 200; command: ${argv.join(" ")}; its last output:\n${tailOf(replica)}`;
      this.fail(replica, new VllmSamplerError(message));
      return;
    }
    if (replica.restarts >= launch.max_restarts) {
      const message =
        `${what} ${exit} after ${replica.restarts} restarts (engine.vllm.launch.max_restarts ` +
        `${launch.max_restarts}); its last output:\n${tailOf(replica)}`;
      logger.error({ replica: replica.index, exit }, "vLLM replica gave up");
      this.fail(replica, new VllmSamplerError(message));
      return;
    }
    replica.state = "starting";
    replica.restarts++;
    const delayMs = launch.restart_backoff_seconds * 1000 * 2 ** (replica.restarts - 1);
    logger.warn(
      { replica: replica.index, exit, restart: replica.restarts, delayMs },
      "vLLM replica exited; restarting",
    );
    setTimeout(() => {
      if (!this.stopping) this.launch(replica);
    }, delayMs);
  }

  private fail(replica: Replica, failure: VllmSamplerError): void {
    replica.state = "failed";
    replica.failure = failure;
    for (const waiter of replica.waiters.splice(0)) waiter.reject(failure);
  }

  /**
   * Polls `GET /health` until 200.
   * @returns true once healthy; false when the process exited first or the replicas are stopping
   * @throws {Error} when the timeout passes (the caller kills the process; its exit reports this message)
   */
  private async waitHealthy(replica: Replica, exited: Promise<Exit>): Promise<boolean> {
    const { launch } = this.options;
    const url = `http://${callHost(launch.host)}:${replica.port}/health`;
    const deadline = Date.now() + launch.health_timeout_seconds * 1000;
    let gone = false;
    void exited.then(() => {
      gone = true;
    });
    while (!this.stopping && !gone) {
      if (Date.now() > deadline) {
        throw new Error(
          `did not answer GET ${url} with 200 within ${launch.health_timeout_seconds} s ` +
            "(engine.vllm.launch.health_timeout_seconds)",
        );
      }
      if (await answers200(url)) return !gone;
      await new Promise((resolve) => setTimeout(resolve, HEALTH_POLL_MS));
    }
    return false;
  }

  private logFor(replica: Replica): WriteStream | null {
    if (this.options.logDir === null) return null;
    const log = createWriteStream(join(this.options.logDir, `vllm-${replica.index}.log`), { flags: "a" });
    log.on("error", () => undefined); // a full disk must not stop the replica's supervision
    this.logs.push(log);
    return log;
  }
}

/** Whether `GET url` answers 200 now (any transport error: not yet). */
async function answers200(url: string): Promise<boolean> {
  try {
    const response = await request(url, { method: "GET", headersTimeout: 5_000, bodyTimeout: 5_000 });
    await response.body.dump();
    return response.statusCode === 200;
  } catch {
    return false;
  }
}

/** SIGTERM to the child's group, SIGKILL to the group after `graceMs`; resolves once the child has exited. */
async function stopChild(child: ChildProcess | null, graceMs: number): Promise<void> {
  if (child === null || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const pid = child.pid;
  const exited = once(child, "exit");
  killGroup(pid, "SIGTERM");
  const force = setTimeout(() => killGroup(pid, "SIGKILL"), graceMs);
  await exited;
  clearTimeout(force);
  // Workers vLLM forked into the group may outlive the leader: the group goes with it.
  killGroup(pid, "SIGKILL");
}
