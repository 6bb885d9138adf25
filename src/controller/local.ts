/** @module Local agent processes: what to run, spawned in their own process group, killed as a whole group. */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { constants as osConstants } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { makeDirs } from "../fs/make-dirs.js";
import type { LocalConfig } from "../protocol/index.js";
import { LogTail } from "./log-tail.js";

const osSignals = osConstants.signals as Record<string, number>;

/** A rollout whose local config says neither what nor how to run; the rollout fails with this message. */
export class LaunchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LaunchError";
  }
}

/** The executable and arguments of one agent process. */
export interface Launch {
  file: string;
  args: string[];
  /** For an `agent_class`: the module and export `args` run (a reused runner runs the same). */
  agentClass?: { modulePath: string; exportName: string };
}

/**
 * Node program running an `agent_class` export (`new Export().run()` for a class, `Export()` for a function), exiting
 * non-zero when it throws. argv: [modulePath, exportName].
 */
const AGENT_RUNNER_SOURCE = `
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
// Taken off argv, so a module's own "run me when I am the main script" check stays false here.
const [modulePath, exportName] = process.argv.splice(1);
const mod = await import(pathToFileURL(resolve(modulePath)).href);
const target = mod[exportName];
if (typeof target !== "function") {
  console.error("arclight agent runner: " + modulePath + " has no class or function export named " + exportName);
  process.exit(2);
}
const isClass = typeof target.prototype?.run === "function" || /^class[\\s{]/.test(Function.prototype.toString.call(target));
if (isClass) {
  const agent = new target();
  if (typeof agent.run !== "function") {
    console.error("arclight agent runner: class " + exportName + " has no run() method");
    process.exit(2);
  }
  await agent.run();
} else {
  await target();
}
process.exit(process.exitCode ?? 0);
`;

/** A Python agent class: `package.module:ClassName`, dotted identifiers on both sides of the colon. */
const PYTHON_AGENT_CLASS = /^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$/;
/** Module names that are JS files, never Python packages (`agent.js:Agent` is a JS module). */
const JS_MODULE = /\.(m|c)?(js|ts)$/;

/** Whether `agent_class` names a Python class: dotted identifiers around the colon, no JS extension or slash. */
export function isPythonAgentClass(agentClass: string): boolean {
  if (!PYTHON_AGENT_CLASS.test(agentClass)) return false;
  return !JS_MODULE.test(agentClass.slice(0, agentClass.indexOf(":")));
}

/** The interpreters that run `agent_class` agents. */
export interface Interpreters {
  /** The node executable of JS agent classes (default: this process's). */
  node?: string;
  /** The Python interpreter of Python agent classes, with `arclight-agent` installed (default `python3`). */
  python?: string;
}

/**
 * What to run: `command` as given, `python -m arclight_agent run` for a Python class, else node on
 * {@link AGENT_RUNNER_SOURCE} (no `:Export` means `default`).
 * @throws {LaunchError} when neither or both of `command` and `agent_class` are set
 */
export function resolveLaunch(local: LocalConfig | undefined, interpreters: Interpreters = {}): Launch {
  const command = local?.command;
  const agentClass = local?.agent_class;
  if (command !== undefined && agentClass !== undefined) {
    throw new LaunchError("config.local sets both command and agent_class; set exactly one");
  }
  if (command !== undefined) return { file: command[0]!, args: command.slice(1) };
  if (agentClass === undefined) {
    throw new LaunchError("no config.local.command or config.local.agent_class for this rollout or the controller");
  }
  // A Python class runs in a fresh process each time: the reused runners (reuse_processes) are Node processes.
  if (isPythonAgentClass(agentClass)) {
    return { file: interpreters.python ?? "python3", args: ["-m", "arclight_agent", "run", agentClass] };
  }
  const colon = agentClass.lastIndexOf(":");
  const modulePath = colon > 0 ? agentClass.slice(0, colon) : agentClass;
  const exportName = colon > 0 ? agentClass.slice(colon + 1) : "default";
  return {
    file: interpreters.node ?? process.execPath,
    args: ["--input-type=module", "-e", AGENT_RUNNER_SOURCE, "--", modulePath, exportName],
    agentClass: { modulePath, exportName },
  };
}

/** How an agent process ended. */
export interface ExitInfo {
  /** Exit code, or null when a signal ended it or it never started. */
  code: number | null;
  /** Signal that ended it, e.g. `SIGKILL`. */
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (e.g. ENOENT). */
  spawnError?: Error;
}

/** Signals the group led by `pid`; refuses pid < 2 (`kill(-1)` signals everything). False when gone or refused. */
export function killGroup(pid: number, signal: NodeJS.Signals): boolean {
  if (!Number.isInteger(pid) || pid < 2) return false;
  try {
    process.kill(-pid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw err;
  }
}

/** SIGTERM the group now, SIGKILL after `graceMs` for whatever is left. */
export function killGroupWithGrace(pid: number, graceMs: number): void {
  killGroup(pid, "SIGTERM");
  setTimeout(() => killGroup(pid, "SIGKILL"), graceMs).unref();
}

/** @returns true when a process with this pid exists (also when it belongs to another user) */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Options of {@link AgentProcess.spawn}. */
export interface SpawnOptions {
  env: Record<string, string>;
  cwd?: string;
  /** Bytes of combined stdout/stderr kept (see {@link LogTail}). */
  logTailBytes: number;
  /** Where a small `sh` wrapper leading the group writes the exit status, so it survives a dead controller. */
  exitFile?: string;
}

/**
 * `sh -c WRAPPER arclight-agent EXIT_FILE FILE ARGS...`: writes its pid to EXIT_FILE.pid, runs the agent, writes the
 * status to EXIT_FILE atomically and exits with it (a signal n shows as 128 + n).
 */
const EXIT_WRAPPER =
  'f=$1; shift; printf "%s\n" "$$" > "$f.pid"; "$@"; code=$?; printf "%s\n" "$code" > "$f.tmp" && mv "$f.tmp" "$f"; exit "$code"';

/** True when `file` names an executable, directly or through `PATH` (a missing one is spawned unwrapped, so ENOENT
 * still reads "failed to start"). */
function executableExists(file: string, env: Record<string, string>, cwd: string | undefined): boolean {
  const candidates = file.includes("/")
    ? [isAbsolute(file) ? file : join(cwd ?? process.cwd(), file)]
    : (env.PATH ?? process.env.PATH ?? "").split(":").map((dir) => join(dir || ".", file));
  return candidates.some((candidate) => {
    try {
      accessSync(candidate, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** The exit status an agent exits with when a signal ended it under the wrapper: 128 + the signal's number. */
function signalOfStatus(code: number): NodeJS.Signals | null {
  if (code <= 128) return null;
  const entry = Object.entries(osSignals).find(([, n]) => n === code - 128);
  return entry ? (entry[0] as NodeJS.Signals) : null;
}

/** What the start marker of an attempt says: no file (never spawned), empty (spawned, no pid written yet), or the pid. */
export type StartMarker = { state: "absent" } | { state: "spawning" } | { state: "started"; pid: number; atMs: number };

/**
 * The start marker `EXIT_FILE.pid`: created empty before the spawn, filled with the pid by the wrapper. It tells
 * "never spawned" from "spawned" after a controller killed before saving its state file.
 */
export function readStartMarker(exitFile: string): StartMarker {
  let text: string;
  let atMs: number;
  try {
    text = readFileSync(`${exitFile}.pid`, "utf8");
    atMs = statSync(`${exitFile}.pid`).mtimeMs;
  } catch {
    return { state: "absent" };
  }
  const pid = Number.parseInt(text.trim(), 10);
  return Number.isInteger(pid) && pid > 1 ? { state: "started", pid, atMs } : { state: "spawning" };
}

/** The status the wrapper wrote, or undefined when absent (still running, or died with its wrapper). */
export function readExitFile(path: string): ExitInfo | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
  const code = Number.parseInt(text.trim(), 10);
  if (!Number.isInteger(code)) return undefined;
  const signal = signalOfStatus(code);
  return signal ? { code: null, signal } : { code, signal: null };
}

/** One running agent: leader of its own process group, its output captured into a {@link LogTail}. */
export class AgentProcess {
  /** Resolves once the leader exited and its output was drained (stragglers in its group are SIGKILLed first). */
  readonly exited: Promise<ExitInfo>;
  /** The last bytes of the agent's interleaved stdout/stderr. */
  readonly tail: LogTail;

  private constructor(
    private readonly child: ChildProcess,
    logTailBytes: number,
    wrapped: boolean,
  ) {
    this.tail = new LogTail(logTailBytes);
    child.stdout?.on("data", (chunk: Buffer) => this.tail.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => this.tail.push(chunk));
    this.exited = watchExit(child, wrapped);
  }

  /** Spawns `launch` detached (a new process group), stdin closed, stdout/stderr piped. */
  static spawn(launch: Launch, options: SpawnOptions): AgentProcess {
    const wrap = options.exitFile !== undefined && executableExists(launch.file, options.env, options.cwd);
    if (wrap) makeDirs(dirname(options.exitFile!));
    const [file, args] = wrap
      ? ["/bin/sh", ["-c", EXIT_WRAPPER, "arclight-agent", options.exitFile!, launch.file, ...launch.args]]
      : [launch.file, launch.args];
    const child = spawn(file, args, {
      env: options.env,
      cwd: options.cwd,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return new AgentProcess(child, options.logTailBytes, wrap);
  }

  /** Pid of the leader (= the process group id); undefined when the spawn failed. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** SIGTERM the whole group now, SIGKILL after `graceMs` (and at the leader's exit). */
  kill(graceMs: number): void {
    const pid = this.child.pid;
    if (pid !== undefined) killGroupWithGrace(pid, graceMs);
  }
}

/** Waits for exit, kills the rest of the group, then waits ≤ 1 s for output to close; 128 + n is signal n. */
function watchExit(child: ChildProcess, wrapped: boolean): Promise<ExitInfo> {
  let closed = false;
  let onClose: () => void = () => {};
  child.on("close", () => {
    closed = true;
    onClose();
  });
  return new Promise((resolve) => {
    child.on("error", (err) => {
      if (child.pid === undefined) resolve({ code: null, signal: null, spawnError: err });
    });
    child.on("exit", (code, signal) => {
      if (child.pid !== undefined) killGroup(child.pid, "SIGKILL");
      const wrappedSignal = wrapped && code !== null ? signalOfStatus(code) : null;
      const done = () => resolve(wrappedSignal ? { code: null, signal: wrappedSignal } : { code, signal });
      if (closed) return done();
      const timer = setTimeout(done, 1000);
      onClose = () => {
        clearTimeout(timer);
        done();
      };
    });
  });
}
