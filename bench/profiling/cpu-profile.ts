/**
 * @module CPU profiles for the benches: a server process profiles itself on request (`node:inspector`, V8's sampling
 * profiler), and a profile's samples are charged to their owner, the component that made the call, so that two
 * servers' profiles can be set side by side per call.
 *
 * Owner of a sample: walking from the sampled frame towards the root, the first frame in an arclight source file
 * (`src/…`, named by its file), in a package (`node_modules/<name>`, named by the package; `tsx`, the loader, is
 * skipped) or in a bench file (`bench/…`). A sample with none of these on its stack is V8's own (`(garbage
 * collector)`, `(program)`: native code outside JavaScript) or Node's (`node:` and the function's name). A system call
 * is charged to whoever made it, in a row of its own: `undici (writev)` is undici's request to the upstream,
 * `fastify (writev)` the gateway's reply. `(idle)` samples are dropped, and so are the profiler's own (stopping it
 * walks the samples, under {@link ProfileSwitch.stop}). A system call is a native frame (no URL) of one of Node's
 * stream and file bindings.
 *
 * Time: each sample is charged the time until the next sample (the last one, until the profile's end), as DevTools
 * does. The profiler samples wall time on the main thread: a gap in the sampling (the thread descheduled, often inside
 * a system call on a busy machine) goes to the stack seen just before it, and work on other threads (libuv's pool, GC
 * helpers) does not show; compare profiles taken in the same run.
 */
import { Session } from "node:inspector/promises";

/** A V8 CPU profile (`Profiler.stop`'s `profile`, the `.cpuprofile` format), as far as the attribution reads it. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  /** µs since the previous sample (the first: since `startTime`), one per sample. */
  timeDeltas: number[];
}

/** Names of Node's native stream and file bindings that make one system call each: a row per caller. */
const SYSTEM_CALLS = new Set([
  "writev",
  "writeBuffer",
  "writeUtf8String",
  "writeLatin1String",
  "writeAsciiString",
  "writeUcs2String",
  "writeString",
]);

/** Sampling interval of {@link ProfileSwitch}, µs. */
export const SAMPLING_INTERVAL_US = 250;

/** Starts and stops V8's CPU profiler on this process's main thread. */
export class ProfileSwitch {
  private session: Session | undefined;

  /** Starts sampling. @throws {Error} already started */
  async start(): Promise<void> {
    if (this.session) throw new Error("the profiler is already running");
    const session = new Session();
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: SAMPLING_INTERVAL_US });
    await session.post("Profiler.start");
    this.session = session;
  }

  /** Stops sampling. @returns the profile since {@link start} @throws {Error} not started */
  async stop(): Promise<CpuProfile> {
    const session = this.session;
    if (!session) throw new Error("the profiler is not running");
    this.session = undefined;
    const { profile } = await session.post("Profiler.stop");
    session.disconnect();
    return profile as CpuProfile;
  }
}

/** This repository's root, as a `file:` URL ending in `/`. */
const REPO_ROOT = new URL("../..", import.meta.url).href;
/** The owner of this module's own frames: the profiler stopping, not the profiled server. */
const PROFILER = "bench/profiling/cpu-profile.ts";

/**
 * The owner of a frame's URL, or undefined when the frame belongs to no component (Node's internals, V8).
 * @param url - the frame's script URL (`file:///…/src/gateway/app.ts`, `node:net`, empty for natives)
 * @param root - the repository's root URL, ending in `/` (default: this repository's)
 * @returns the package (the innermost `node_modules/` one), or the file's path under `src/` or `bench/`; a file of
 *   the compiled build is named by its source (`dist/gateway/app.js` → `src/gateway/app.ts`)
 */
export function componentOf(url: string, root = REPO_ROOT): string | undefined {
  const pkg = /.*node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1] === "tsx" ? undefined : pkg[1];
  if (!url.startsWith(root)) return undefined;
  const path = url.slice(root.length).replace(/[?#].*$/, "");
  if (path.startsWith("dist/") && path.endsWith(".js")) return `src/${path.slice("dist/".length, -".js".length)}.ts`;
  return path.startsWith("src/") || path.startsWith("bench/") ? path : undefined;
}

/**
 * Charges every sample's time to its owner (see the module doc).
 * @param profile - one profile
 * @param root - the repository's root URL (see {@link componentOf})
 * @returns µs of samples per owner; `(idle)` and the profiler's own left out
 */
export function attribute(profile: CpuProfile, root = REPO_ROOT): Map<string, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  // The nearest component at or above each node; null: none up to the root.
  const owners = new Map<number, string | null>();
  const componentAbove = (id: number): string | null => {
    const known = owners.get(id);
    if (known !== undefined) return known;
    const parent = parentOf.get(id);
    const owner =
      componentOf(byId.get(id)!.callFrame.url, root) ?? (parent === undefined ? null : componentAbove(parent));
    owners.set(id, owner);
    return owner;
  };
  const time = new Map<string, number>();
  const lastAt = profile.startTime + profile.timeDeltas.reduce((sum, dt) => sum + dt, 0);
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === "(idle)") return;
    const component = componentAbove(id);
    if (component === PROFILER) return;
    const base = component ?? "node";
    const native = frame.url === "" && SYSTEM_CALLS.has(frame.functionName);
    const owner = native ? `${base} (${frame.functionName})` : (component ?? nodeName(frame));
    const us = i + 1 < profile.samples.length ? profile.timeDeltas[i + 1]! : Math.max(0, profile.endTime - lastAt);
    time.set(owner, (time.get(owner) ?? 0) + us);
  });
  return time;
}

/** The name of a sample with no component above it: V8's pseudo-frames as they are, Node's by function. */
function nodeName(frame: { functionName: string; url: string }): string {
  if (frame.functionName.startsWith("(")) return frame.functionName;
  return `node: ${frame.functionName || frame.url || "(anonymous)"}`;
}

/** One server's attributed profile (see {@link attribute}) and the calls it answered while profiled. */
export interface ProfiledServer {
  name: string;
  time: Map<string, number>;
  calls: number;
}

/**
 * A table of profiled µs per call by owner, one column per server, with the last column minus the one before it;
 * rows sorted by that difference, largest first. Owners under `minUs` in every column are summed in one row.
 * @param servers - two or more servers, the last two compared
 * @param minUs - the smallest µs per call given its own row
 * @returns the table's lines
 */
export function perCallTable(servers: readonly ProfiledServer[], minUs = 2): string[] {
  if (servers.length < 2) throw new Error("perCallTable needs two servers or more");
  const perCall = servers.map((s) => new Map([...s.time].map(([owner, us]) => [owner, us / s.calls])));
  const owners = [...new Set(perCall.flatMap((m) => [...m.keys()]))];
  const cell = (column: number, owner: string): number => perCall[column]!.get(owner) ?? 0;
  const [a, b] = [servers.length - 2, servers.length - 1];
  const shown = owners
    .filter((owner) => perCall.some((_, c) => cell(c, owner) >= minUs))
    .sort((x, y) => cell(b, y) - cell(a, y) - (cell(b, x) - cell(a, x)));
  const width = Math.max(24, ...shown.map((o) => o.length));
  const fmt = (v: number): string => v.toFixed(1).padStart(9);
  const line = (label: string, values: number[]): string =>
    `${label.padEnd(width)}${values.map(fmt).join("")}${fmt(values[b]! - values[a]!)}`;
  const total = (column: number, list: string[]): number => list.reduce((sum, o) => sum + cell(column, o), 0);
  const rest = owners.filter((o) => !shown.includes(o));
  const columns = servers.map((_, c) => c);
  return [
    `${"owner".padEnd(width)}${servers.map((s) => s.name.slice(0, 8).padStart(9)).join("")}${"diff".padStart(9)}`,
    ...shown.map((owner) =>
      line(
        owner,
        columns.map((c) => cell(c, owner)),
      ),
    ),
    line(
      `other (${rest.length} owners)`,
      columns.map((c) => total(c, rest)),
    ),
    line(
      "total",
      columns.map((c) => total(c, owners)),
    ),
  ];
}
