/**
 * The benches' CPU-profile attribution (`bench/profiling/cpu-profile.ts`): owners on a hand-built profile whose answer is known,
 * a real profile of this process taken with the profiler switch, and the per-call table.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  attribute,
  type CpuProfile,
  componentOf,
  ProfileSwitch,
  perCallTable,
} from "../bench/profiling/cpu-profile.js";

const ROOT = "file:///home/me/src/arclight";
type Frame = [id: number, functionName: string, url: string, children: number[]];

/** A profile in which sample i (a node id) lasts `us` µs: the time until the next sample, or the profile's end. */
function profileOf(frames: Frame[], samples: [id: number, us: number][]): CpuProfile {
  const durations = samples.map(([, us]) => us);
  return {
    nodes: frames.map(([id, functionName, url, children]) => ({ id, callFrame: { functionName, url }, children })),
    startTime: 1000,
    endTime: 1000 + durations.reduce((sum, us) => sum + us, 0),
    samples: samples.map(([id]) => id),
    // Each delta is the time since the previous sample: the first sample is taken at the start.
    timeDeltas: [0, ...durations.slice(0, -1)],
  };
}

describe("componentOf", () => {
  it("names arclight files, packages (scoped too) and bench files, and nothing else", () => {
    expect(componentOf(`${ROOT}/src/gateway/proxy/forward.ts`, `${ROOT}/`)).toBe("src/gateway/proxy/forward.ts");
    expect(componentOf(`${ROOT}/node_modules/undici/lib/dispatcher/client-h1.js`, `${ROOT}/`)).toBe("undici");
    expect(componentOf(`${ROOT}/node_modules/@fastify/ajv-compiler/index.js`, `${ROOT}/`)).toBe(
      "@fastify/ajv-compiler",
    );
    expect(componentOf(`${ROOT}/node_modules/fastify/node_modules/pino/pino.js`, `${ROOT}/`)).toBe("pino");
    expect(componentOf(`${ROOT}/bench/proxy.ts`, `${ROOT}/`)).toBe("bench/proxy.ts");
    expect(componentOf(`${ROOT}/dist/gateway/proxy/forward.js`, `${ROOT}/`)).toBe("src/gateway/proxy/forward.ts");
    expect(componentOf(`${ROOT}/dist/gateway/proxy/forward.d.ts`, `${ROOT}/`)).toBeUndefined();
    expect(componentOf(`${ROOT}/node_modules/tsx/dist/esm/index.mjs`, `${ROOT}/`)).toBeUndefined();
    expect(componentOf(`${ROOT}/test/x.test.ts`, `${ROOT}/`)).toBeUndefined();
    expect(componentOf(`file:///elsewhere/src/a.ts`, `${ROOT}/`)).toBeUndefined();
    expect(componentOf("node:net", `${ROOT}/`)).toBeUndefined();
    expect(componentOf("", `${ROOT}/`)).toBeUndefined();
  });
});

describe("attribute", () => {
  const frames: Frame[] = [
    [1, "(root)", "", [2, 3, 4, 8, 9, 11]],
    [2, "handler", `${ROOT}/src/gateway/app.ts`, [5]],
    [3, "(garbage collector)", "", []],
    [4, "(idle)", "", []],
    [5, "emit", "node:events", [6, 7]],
    [6, "onData", `${ROOT}/node_modules/undici/lib/core.js`, [10, 13]],
    [7, "writev", "", []],
    [8, "processTicksAndRejections", "node:internal/process/task_queues", [12]],
    [9, "stop", `${ROOT}/bench/profiling/cpu-profile.ts`, []],
    [10, "writev", "", []],
    [11, "load", `${ROOT}/node_modules/tsx/dist/loader.mjs`, []],
    [12, "nextTick", "node:internal/process/task_queues", []],
    [13, "writeBuffer", `${ROOT}/node_modules/undici/lib/client-h1.js`, []],
  ];
  const samples: [number, number][] = [
    [2, 100], // the handler itself
    [5, 10], // Node's emit, called by the handler: the handler's
    [6, 20], // undici, called through emit
    [7, 30], // a system call made by the handler (through emit)
    [10, 40], // a system call made by undici
    [13, 3], // undici's own JS function named like a binding: undici's code, not a system call
    [3, 50], // GC
    [4, 1000], // idle: dropped
    [9, 60], // the profiler stopping: dropped
    [11, 5], // tsx, no component above: named by function
    [12, 7], // Node with no component above: named by the sampled function
  ];

  it("charges each sample to the nearest component above it, system calls to their caller in a row of their own", () => {
    const time = attribute(profileOf(frames, samples), `${ROOT}/`);
    expect(Object.fromEntries(time)).toEqual({
      "src/gateway/app.ts": 110,
      undici: 23,
      "src/gateway/app.ts (writev)": 30,
      "undici (writev)": 40,
      "(garbage collector)": 50,
      "node: load": 5,
      "node: nextTick": 7,
    });
  });

  it("charges each sample the time until the next one, the last until the profile's end (as DevTools does)", () => {
    const two: Frame[] = [
      [1, "(root)", "", [2, 3]],
      [2, "a", `${ROOT}/src/a.ts`, []],
      [3, "b", `${ROOT}/src/b.ts`, []],
    ];
    // a at 1,000 µs, b 900 µs later (a gap: the thread was away), the end 10 µs after b.
    const profile: CpuProfile = {
      nodes: two.map(([id, functionName, url, children]) => ({ id, callFrame: { functionName, url }, children })),
      startTime: 1000,
      endTime: 1910,
      samples: [2, 3],
      timeDeltas: [0, 900],
    };
    expect(Object.fromEntries(attribute(profile, `${ROOT}/`))).toEqual({ "src/a.ts": 900, "src/b.ts": 10 });
  });
});

describe("ProfileSwitch", () => {
  it("profiles this process between start and stop, and the samples it took are charged to the code that ran", async () => {
    const profiler = new ProfileSwitch();
    const schema = z.object({ a: z.array(z.number()), b: z.string().min(1) });
    await profiler.start();
    await expect(profiler.start()).rejects.toThrow("already running");
    const until = performance.now() + 300;
    let parsed = 0;
    while (performance.now() < until) {
      schema.parse({ a: [1, 2, 3], b: "x" });
      parsed++;
    }
    const profile = await profiler.stop();
    await expect(profiler.stop()).rejects.toThrow("not running");
    expect(parsed).toBeGreaterThan(0);
    const time = attribute(profile);
    const busy = [...time.values()].reduce((sum, us) => sum + us, 0);
    // 300 ms of a busy loop: most samples are that loop, and zod's parse is a visible part of it.
    expect(busy).toBeGreaterThan(200_000);
    expect(time.get("zod") ?? 0).toBeGreaterThan(busy * 0.1);
  });
});

describe("perCallTable", () => {
  it("divides by each server's calls, sorts by last minus next-to-last, and sums small owners into one row", () => {
    const lines = perCallTable([
      {
        name: "floor",
        time: new Map([
          ["a", 400],
          ["b", 1000],
          ["tiny", 10],
        ]),
        calls: 100,
      },
      {
        name: "gateway",
        time: new Map([
          ["a", 2000],
          ["b", 1200],
          ["c", 600],
          ["tiny", 20],
        ]),
        calls: 100,
      },
    ]);
    const cells = lines.map((line) =>
      line
        .trim()
        .split(/\s{2,}|\s(?=[-\d])/)
        .filter(Boolean),
    );
    expect(cells[0]).toEqual(["owner", "floor", "gateway", "diff"]);
    expect(cells.slice(1)).toEqual([
      ["a", "4.0", "20.0", "16.0"],
      ["c", "0.0", "6.0", "6.0"],
      ["b", "10.0", "12.0", "2.0"],
      ["other (1 owners)", "0.1", "0.2", "0.1"],
      ["total", "14.1", "38.2", "24.1"],
    ]);
    expect(() => perCallTable([{ name: "one", time: new Map(), calls: 1 }])).toThrow("two servers");
  });
});
