/**
 * @module A server child that prints its URL once listening. Its own process group keeps a terminal Ctrl-C away, so
 * the parent decides the order of stopping.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { PARENT_PID_ENV } from "./parent-watch.js";

/** A started server child. */
export interface ServerChild {
  /** The first capture group of the URL pattern, as printed. */
  url: string;
  process: ChildProcess;
  /** SIGTERM, then SIGKILL if still running after the grace period; resolves once it has exited. */
  stop(): Promise<void>;
}

/** How to start one. */
export interface ServerChildOptions {
  /** Executable and arguments. */
  argv: readonly string[];
  /** Extra environment on top of this process's. */
  env?: Record<string, string>;
  /** Matched against the complete lines the child has written to stdout so far; capture group 1 is the URL. */
  urlPattern: RegExp;
  /** Names the child in error messages, e.g. "gateway child". */
  what: string;
  /** How long to wait for the URL line (ms). Default 30,000. */
  startTimeoutMs?: number;
  /** How long `stop` waits after SIGTERM before SIGKILL (ms). Default 5,000. */
  stopGraceMs?: number;
}

/** Spawns the child and waits for its URL line. @throws {Error} naming `what` when it exits or times out first */
export async function startServerChild(options: ServerChildOptions): Promise<ServerChild> {
  const [exe, ...args] = options.argv;
  if (exe === undefined) throw new RangeError("argv is empty");
  const child = spawn(exe, args, {
    env: { ...process.env, ...options.env, [PARENT_PID_ENV]: String(process.pid) },
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
  // A second Ctrl-C exits at once without stopping the child: SIGTERM its group on the way out.
  const onParentExit = () => {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
  };
  process.on("exit", onParentExit);
  child.once("exit", () => process.off("exit", onParentExit));
  const timeoutMs = options.startTimeoutMs ?? 30_000;
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${options.what} did not report its URL within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    let seen = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      // Complete lines only: a URL cut between two writes must not match half-way.
      const match = options.urlPattern.exec(seen.slice(0, seen.lastIndexOf("\n") + 1));
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`${options.what} could not start: ${error.message}`));
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${options.what} exited (${signal ?? `code ${code}`}) before listening`));
    });
  });
  // Keep draining stdout so a chatty child never blocks on a full pipe.
  child.stdout?.resume();
  const graceMs = options.stopGraceMs ?? 5_000;
  return {
    url,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const force = setTimeout(() => child.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(force);
    },
  };
}
