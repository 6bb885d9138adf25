/**
 * `reuse_processes`: the local controller runs `agent_class` rollouts one after another in long-lived runner processes.
 * Real gateway, real controller, real runner processes. Each run sees exactly its own environment and output, a
 * failed run reports its code and log as a one-shot process would, and a runner that is killed, exits or is shut down
 * is never reused; after a controller crash the runner's exit file carries the run's status to the next controller.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { processAlive } from "../src/controller/local.js";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";

let h: ControllerHarness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.close();
});

/**
 * Agents of these tests. `record` appends `pid env-json` to $OUT; the others fail in one way each.
 * `waitFor` runs until the file $GO exists.
 */
const AGENTS = [
  "import { appendFileSync, existsSync } from 'node:fs';",
  "export function record() {",
  "  console.log('output of ' + process.env.AGL_ROLLOUT_ID);",
  "  appendFileSync(process.env.OUT, process.pid + ' ' + JSON.stringify(process.env) + '\\n');",
  "}",
  "export async function fail() {",
  "  console.log('output of ' + process.env.AGL_ROLLOUT_ID);",
  "  throw new Error('agent broke on ' + process.env.AGL_ROLLOUT_ID);",
  "}",
  "export function code3() { appendFileSync(process.env.OUT, process.pid + ' {}\\n'); process.exitCode = 3; }",
  "export function exit4() { appendFileSync(process.env.OUT, process.pid + ' {}\\n'); process.exit(4); }",
  "export function hang() { appendFileSync(process.env.OUT, process.pid + ' {}\\n'); return new Promise(() => {}); }",
  "export async function waitFor() {",
  "  appendFileSync(process.env.OUT, process.pid + ' {}\\n');",
  "  while (!existsSync(process.env.GO)) await new Promise((r) => setTimeout(r, 20));",
  "  process.exitCode = 5;",
  "}",
].join("\n");

/** The pids (and environments) the runs appended to `out`, in run order. */
function runsIn(out: string): { pid: number; env: Record<string, string> }[] {
  if (!existsSync(out)) return [];
  return readFileSync(out, "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const space = line.indexOf(" ");
      return { pid: Number(line.slice(0, space)), env: JSON.parse(line.slice(space + 1)) as Record<string, string> };
    });
}

/** A rollout running `agents.mjs:EXPORT`, appending to `out`, with more env_map entries. */
function rolloutOf(id: string, exportName: string, out: string, more: Record<string, string> = {}, timeout = 30) {
  return {
    rollout_id: id,
    input: { out, ...more },
    config: {
      timeout_seconds: timeout,
      local: {
        agent_class: `agents.mjs:${exportName}`,
        env_map: {
          OUT: "input.out",
          ...Object.fromEntries(Object.keys(more).map((k) => [k.toUpperCase(), `input.${k}`])),
        },
      },
    },
  };
}

describe("reuse_processes", () => {
  it("runs rollouts one after another in one runner, each with exactly its own environment", async () => {
    h.script("agents.mjs", AGENTS);
    const out = join(h.dir, "runs.txt");
    const ids = ["r0", "r1", "r2", "r3"];
    // r0 alone has a SECRET in its env_map: the runs after it must not see it.
    await h.create(ids.map((id) => rolloutOf(id, "record", out, id === "r0" ? { secret: "only-r0" } : {})));
    h.controller({ pool_size: 1, reuse_processes: true }).start();
    const done = await h.waitTerminal(ids);
    expect(done.map((r) => r.status.state)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
    const runs = runsIn(out);
    expect(runs.map((run) => run.env.AGL_ROLLOUT_ID).sort()).toEqual(ids);
    expect(new Set(runs.map((run) => run.pid)).size).toBe(1); // one runner served all four
    const first = runs.find((run) => run.env.AGL_ROLLOUT_ID === "r0")!;
    expect(first.env.SECRET).toBe("only-r0");
    for (const run of runs.filter((r) => r !== first)) expect(run.env.SECRET).toBeUndefined();
  });

  it("handing a rollout to an idle runner spends no spawn token", async () => {
    h.script("agents.mjs", AGENTS);
    const out = join(h.dir, "runs.txt");
    const ids = ["s0", "s1", "s2", "s3", "s4", "s5"];
    await h.create(ids.map((id) => rolloutOf(id, "record", out)));
    // Two spawns, then one every 1,000 s: the six runs finish only if the reused runners' runs spend no token.
    h.controller({ pool_size: 2, reuse_processes: true, spawn_rate_per_second: 0.001, spawn_burst: 2 }).start();
    const done = await h.waitTerminal(ids, 20_000);
    expect(done.map((r) => r.status.state)).toEqual(ids.map(() => "succeeded"));
    expect(new Set(runsIn(out).map((run) => run.pid)).size).toBeLessThanOrEqual(2);
  });

  it("one pass hands every idle runner a queued rollout, with no token left", async () => {
    h.script("agents.mjs", AGENTS);
    const out = join(h.dir, "runs.txt");
    const c = h.controller({ pool_size: 4, reuse_processes: true, spawn_rate_per_second: 0.001, spawn_burst: 4 });
    await h.create(["a0", "a1", "a2", "a3"].map((id) => rolloutOf(id, "record", out)));
    await c.reconcileOnce(); // four runners, the four tokens
    await h.waitFor("four idle runners", () => (c.liveCount === 0 && runsIn(out).length === 4 ? true : undefined));
    const second = ["b0", "b1", "b2", "b3"];
    await h.create(second.map((id) => rolloutOf(id, "record", out)));
    await c.reconcileOnce();
    const states = await Promise.all(second.map(async (id) => (await h.client.getRollout(id)).rollout.status.state));
    expect(states.filter((state) => state === "queuing")).toEqual([]);
    c.start();
    await h.waitTerminal(second);
    expect(new Set(runsIn(out).map((run) => run.pid)).size).toBe(4);
  });

  it("a queued rollout waiting for a token does not hold back a later one an idle runner can take", async () => {
    h.script("agents.mjs", AGENTS);
    const out = join(h.dir, "runs.txt");
    const c = h.controller({ pool_size: 2, reuse_processes: true, spawn_rate_per_second: 0.001, spawn_burst: 1 });
    await h.create([rolloutOf("y0", "record", out)]);
    await c.reconcileOnce(); // the one token
    await h.waitFor("an idle runner", () => (c.liveCount === 0 && runsIn(out).length === 1 ? true : undefined));
    const command = { timeout_seconds: 30, local: { command: [process.execPath, "-e", ""] } };
    await h.create([{ rollout_id: "cmd", input: {}, config: command }, rolloutOf("y1", "record", out)]);
    await c.reconcileOnce();
    expect((await h.client.getRollout("cmd")).rollout.status.state).toBe("queuing"); // needs a token
    expect((await h.client.getRollout("y1")).rollout.status.state).toBe("running");
    c.start();
    await h.waitTerminal(["y1"]);
  });

  it("without reuse_processes a spawn token is spent per rollout", async () => {
    h.script("agents.mjs", AGENTS);
    const out = join(h.dir, "runs.txt");
    await h.create(["t0", "t1", "t2"].map((id) => rolloutOf(id, "record", out)));
    h.controller({ pool_size: 2, spawn_rate_per_second: 0.001, spawn_burst: 2 }).start();
    await h.waitTerminal(["t0", "t1"], 20_000);
    // Queued rollouts start in creation order; the third waits for a token.
    expect((await h.client.getRollout("t2")).rollout.status.state).toBe("queuing");
  });

  it("without reuse_processes every rollout gets its own process", async () => {
    h.script("agents.mjs", AGENTS);
    const out = join(h.dir, "runs.txt");
    await h.create(["a", "b", "c"].map((id) => rolloutOf(id, "record", out)));
    h.controller({ pool_size: 1 }).start();
    await h.waitTerminal(["a", "b", "c"]);
    expect(new Set(runsIn(out).map((run) => run.pid)).size).toBe(3);
  });

  it("reports a thrown error or an exit code as a one-shot process would, with that run's output only", async () => {
    h.script("agents.mjs", AGENTS);
    const out = join(h.dir, "runs.txt");
    await h.create([rolloutOf("ok", "record", out)]);
    const controller = h.controller({ pool_size: 1, reuse_processes: true });
    controller.start();
    await h.waitTerminal(["ok"]);
    await h.create([rolloutOf("broke", "fail", out), rolloutOf("three", "code3", out)]);
    await h.waitTerminal(["broke", "three"]);
    await h.create([rolloutOf("after", "record", out)]);
    const [broke, three, after] = await h.waitTerminal(["broke", "three", "after"]);
    expect(broke!.status.error_message).toBe("exited with code 1");
    const log = (await h.client.getEvents("broke", { eventType: "log" }))[0]!.data as { text: string };
    expect(log.text).toContain("output of broke");
    expect(log.text).toContain("agent broke on broke");
    expect(log.text).not.toContain("output of ok"); // the earlier run's output is not this run's
    expect(three!.status.error_message).toBe("exited with code 3");
    expect(after!.status.state).toBe("succeeded"); // the exit code set by the run before does not stick
    expect(new Set(runsIn(out).map((run) => run.pid)).size).toBe(1);
  });

  it.each([
    { what: "calls process.exit", agent: "exit4", timeout: 30, message: "exited with code 4" },
    {
      what: "runs past its timeout (killed with its runner)",
      agent: "hang",
      timeout: 1,
      message: "timed out after 1 s",
    },
  ])("a run that $what ends its runner; the next run gets a new one", async ({ agent, timeout, message }) => {
    h.script("agents.mjs", AGENTS);
    const out = join(h.dir, "runs.txt");
    await h.create([rolloutOf("ends", agent, out, {}, timeout)]);
    h.controller({ pool_size: 1, reuse_processes: true }).start();
    const [ended] = await h.waitTerminal(["ends"]);
    expect(ended!.status.error_message).toBe(message);
    await h.create([rolloutOf("next", "record", out)]);
    const [next] = await h.waitTerminal(["next"]);
    expect(next!.status.state).toBe("succeeded");
    const [a, b] = runsIn(out);
    expect(a!.pid).not.toBe(b!.pid);
    await h.waitFor("the ended runner gone", () => (processAlive(a!.pid) ? undefined : true), 5000);
  });

  it("a module without the export fails the rollout with exit code 2 and the runner's message", async () => {
    h.script("agents.mjs", AGENTS);
    await h.create([rolloutOf("missing", "Nope", join(h.dir, "runs.txt"))]);
    h.controller({ reuse_processes: true }).start();
    const [missing] = await h.waitTerminal(["missing"]);
    expect(missing!.status.error_message).toBe("exited with code 2");
    const log = (await h.client.getEvents("missing", { eventType: "log" }))[0]!.data as { text: string };
    expect(log.text).toContain("has no class or function export named Nope");
  });

  it("shutdown leaves no runner behind", async () => {
    h.script("agents.mjs", AGENTS);
    const out = join(h.dir, "runs.txt");
    await h.create(["a", "b", "c", "d"].map((id) => rolloutOf(id, "record", out)));
    const controller = h.controller({ pool_size: 2, reuse_processes: true });
    controller.start();
    await h.waitTerminal(["a", "b", "c", "d"]);
    const pids = [...new Set(runsIn(out).map((run) => run.pid))];
    expect(pids.every(processAlive)).toBe(true); // idle, waiting for the next run
    await controller.shutdown();
    await h.waitFor("runners gone", () => (pids.some(processAlive) ? undefined : true), 5000);
  });

  // Once the controller's channel closes, a runner whose run can never settle would see its event loop empty and exit
  // 0, and the next controller would report a run that never finished as succeeded (e.g. after kill -9 of arclight
  // train).
  it("after a controller crash, a run that can never settle is reported failed (exit code 13), not succeeded", async () => {
    h.script("agents.mjs", AGENTS);
    const out = join(h.dir, "runs.txt");
    await h.create([rolloutOf("stuck", "hang", out)]);
    const first = h.controller({ pool_size: 1, reuse_processes: true });
    first.start();
    const [run] = await h.waitFor("the run started", () => (runsIn(out).length > 0 ? runsIn(out) : undefined));
    await first.abandon();
    await h.waitFor("the runner gone", () => (processAlive(run!.pid) ? undefined : true), 5000);
    h.controller({ pool_size: 1, reuse_processes: true }).start();
    const [done] = await h.waitTerminal(["stuck"]);
    expect(done!.status.state).toBe("failed");
    expect(done!.status.error_message).toBe("exited with code 13");
  });

  it("after a controller crash, the next controller reports the status of the run the runner finished", async () => {
    h.script("agents.mjs", AGENTS);
    const out = join(h.dir, "runs.txt");
    const go = join(h.dir, "go");
    await h.create([rolloutOf("survives", "waitFor", out, { go })]);
    const first = h.controller({ pool_size: 1, reuse_processes: true });
    first.start();
    const [run] = await h.waitFor("the run started", () => (runsIn(out).length > 0 ? runsIn(out) : undefined));
    await first.abandon(); // the runner's channel closes: it finishes this run, writes its exit file, and exits
    const second = h.controller({ pool_size: 1, reuse_processes: true });
    await second.reconcileOnce();
    expect(second.liveCount).toBe(1); // the runner, adopted
    writeFileSync(go, "");
    second.start();
    const [done] = await h.waitTerminal(["survives"]);
    expect(done!.status.error_message).toBe("exited with code 5");
    expect(processAlive(run!.pid)).toBe(false);
  });
});
