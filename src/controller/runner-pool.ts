/**
 * @module Reused agent processes (`reuse_processes`): Node runners that run `agent_class` rollouts one after another
 * (docs/controller.md). A lease looks to the reconcile loop like an {@link AgentProcess}; a runner that is killed,
 * crashes or calls `process.exit` is gone, and the next lease starts a new one.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { dirname } from "node:path";
import { makeDirs } from "../fs/make-dirs.js";
import { type ExitInfo, killGroup, killGroupWithGrace } from "./local.js";
import { LogTail } from "./log-tail.js";

/**
 * Node program of a runner (argv: [modulePath]). Per IPC `{ env, exitFile, exportName }` it sets `process.env` to
 * `env`, runs the export, writes the status atomically and answers `{ code }` (1 threw, 2 no export). When the channel
 * closes it finishes its run and exits with its code (13 when the run can never settle).
 */
const RUNNER_SOURCE = `
import { renameSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
// Taken off argv, so a module's own "run me when I am the main script" check stays false here.
const [modulePath] = process.argv.splice(1);
let current = null;
const writeExit = (file, code) => {
  writeFileSync(file + ".tmp", code + "\\n");
  renameSync(file + ".tmp", file);
};
// The event loop emptied while a run was in hand (only possible once the controller's channel is gone): its promise
// can never settle. It fails as an unsettled top-level await does in a one-shot runner: exit code 13.
process.on("beforeExit", () => {
  if (current === null) return;
  console.error("arclight agent runner: the run never settled (nothing left for it to wait for)");
  process.exitCode = 13;
});
process.on("exit", (code) => {
  if (current !== null) writeExit(current, code);
});
const mod = await import(pathToFileURL(resolve(modulePath)).href);
const isClass = (target) =>
  typeof target.prototype?.run === "function" || /^class[\\s{]/.test(Function.prototype.toString.call(target));
async function runExport(exportName) {
  const target = mod[exportName];
  if (typeof target !== "function") {
    console.error("arclight agent runner: " + modulePath + " has no class or function export named " + exportName);
    return 2;
  }
  if (isClass(target)) {
    const agent = new target();
    if (typeof agent.run !== "function") {
      console.error("arclight agent runner: class " + exportName + " has no run() method");
      return 2;
    }
    await agent.run();
  } else {
    await target();
  }
  return process.exitCode ?? 0;
}
let closing = false;
process.on("disconnect", () => {
  closing = true;
  if (current === null) process.exit(0);
});
process.on("message", async ({ env, exitFile, exportName }) => {
  for (const name of Object.keys(process.env)) if (!(name in env)) delete process.env[name];
  Object.assign(process.env, env);
  process.exitCode = undefined;
  current = exitFile;
  let code;
  try {
    code = await runExport(exportName);
  } catch (err) {
    console.error(err);
    code = 1;
  }
  process.exitCode = undefined;
  current = null;
  writeExit(exitFile, code);
  if (closing) process.exit(code);
  process.send({ code });
});
`;

/** What a runner runs: the node executable and the agent module and export. */
export interface RunnerTarget {
  /** The node executable. */
  node: string;
  /** `path/to/module.js` (resolved against `cwd`); one runner serves every export of one module. */
  modulePath: string;
  exportName: string;
}

/** One attempt's use of a runner. */
export interface LeaseOptions {
  /** The attempt's complete environment (`process.env` is set to exactly this for the run). */
  env: Record<string, string>;
  /** Where the exit status is written when the run ends. */
  exitFile: string;
  /** Working directory of a runner started for this lease (a reused runner keeps its own). */
  cwd?: string;
  /** Bytes of the run's output kept. */
  logTailBytes: number;
}

/** One attempt on a runner; `exited` resolves when the run answers or the runner ends. */
export interface RunnerLease {
  readonly pid: number | undefined;
  /** True when this lease started a new runner process; false when it took an idle one. */
  readonly started: boolean;
  readonly exited: Promise<ExitInfo>;
  /** The runner's output while this run had it. */
  readonly tail: LogTail;
  /** Kills the runner's process group (SIGTERM, SIGKILL after `graceMs`); the runner is not reused. */
  kill(graceMs: number): void;
}

/** A live runner process. */
class Runner {
  readonly exited: Promise<ExitInfo>;
  /** The lease's tail while leased; output outside a lease is dropped. */
  tail: LogTail | null = null;
  private answer: ((info: ExitInfo) => void) | null = null;
  dead = false;

  constructor(
    readonly key: string,
    private readonly child: ChildProcess,
  ) {
    child.stdout?.on("data", (chunk: Buffer) => this.tail?.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => this.tail?.push(chunk));
    child.on("message", (message: { code?: unknown }) => {
      const code = typeof message?.code === "number" ? message.code : 1;
      // Output written just before the answer may still sit in the pipes: read it into this run's tail first.
      setImmediate(() => this.settle({ code, signal: null }));
    });
    this.exited = new Promise((resolve) => {
      child.on("error", (err) => {
        if (child.pid === undefined) resolve({ code: null, signal: null, spawnError: err });
      });
      child.on("exit", (code, signal) => {
        if (child.pid !== undefined) killGroup(child.pid, "SIGKILL");
        resolve({ code, signal });
      });
    });
    void this.exited.then((info) => {
      this.dead = true;
      // A run in hand ends with the runner; let the last output arrive first.
      setTimeout(() => this.settle(info), 20);
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Hands the runner one run. @returns its exit */
  run(options: LeaseOptions & { exportName: string }, tail: LogTail): Promise<ExitInfo> {
    this.tail = tail;
    return new Promise((resolve) => {
      this.answer = resolve;
      makeDirs(dirname(options.exitFile));
      const message = { env: options.env, exitFile: options.exitFile, exportName: options.exportName };
      this.child.send(message, (err) => {
        if (err) this.kill(0);
      });
    });
  }

  private settle(info: ExitInfo): void {
    const answer = this.answer;
    if (answer === null) return;
    this.answer = null;
    this.tail = null;
    answer(info);
  }

  kill(graceMs: number): void {
    const pid = this.child.pid;
    this.dead = true;
    if (pid !== undefined) killGroupWithGrace(pid, graceMs);
  }

  /** Closes the channel: an idle runner exits at once, a busy one after its run. */
  release(): void {
    if (this.child.connected) this.child.disconnect();
  }
}

/** Which runners can serve a lease: same node, module and working directory. */
function runnerKey(target: Pick<RunnerTarget, "node" | "modulePath">, cwd: string | undefined): string {
  return JSON.stringify([target.node, target.modulePath, cwd ?? ""]);
}

/** Runners by target, at most `maxRunners`; at the limit a lease ends an idle runner of another target. */
export class RunnerPool {
  private readonly idle: Runner[] = [];
  private readonly busy = new Set<Runner>();

  /** @param maxRunners - most runners alive at once (the controller's pool size) */
  constructor(private readonly maxRunners: number) {}

  /** Runners alive now, idle or leased. */
  get size(): number {
    return this.idle.length + this.busy.size;
  }

  /** Runs one attempt on a runner of `target`. */
  lease(target: RunnerTarget, options: LeaseOptions): RunnerLease {
    const key = runnerKey(target, options.cwd);
    const idle = this.takeIdle(key);
    const runner = idle ?? this.start(key, target, options);
    this.busy.add(runner);
    const tail = new LogTail(options.logTailBytes);
    const exited = runner.run({ ...options, exportName: target.exportName }, tail).then((info) => {
      this.busy.delete(runner);
      if (!runner.dead && info.code !== null && info.signal === null) this.idle.push(runner);
      else runner.kill(0);
      return info;
    });
    return { pid: runner.pid, started: idle === undefined, exited, tail, kill: (graceMs) => runner.kill(graceMs) };
  }

  /** Whether a {@link lease} now would take an idle runner (the controller spends a spawn token only when not). */
  hasIdle(target: Pick<RunnerTarget, "node" | "modulePath">, cwd: string | undefined): boolean {
    const key = runnerKey(target, cwd);
    return this.idle.some((runner) => runner.key === key && !runner.dead);
  }

  /** Ends every idle runner; leased runners end after their run (or with their kill). */
  close(): void {
    for (const runner of this.idle.splice(0)) runner.release();
    for (const runner of this.busy) runner.release();
  }

  private takeIdle(key: string): Runner | undefined {
    const index = this.idle.findIndex((runner) => runner.key === key && !runner.dead);
    return index < 0 ? undefined : this.idle.splice(index, 1)[0];
  }

  private start(key: string, target: RunnerTarget, options: LeaseOptions): Runner {
    this.idle.splice(0, this.idle.length, ...this.idle.filter((runner) => !runner.dead));
    while (this.size >= this.maxRunners && this.idle.length > 0) this.idle.shift()?.release();
    const child = spawn(target.node, ["--input-type=module", "-e", RUNNER_SOURCE, "--", target.modulePath], {
      env: options.env,
      cwd: options.cwd,
      detached: true,
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    return new Runner(key, child);
  }
}
