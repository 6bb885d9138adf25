/**
 * A controller killed at the worst points of starting an attempt, reproduced deterministically: the kill point throws
 * (ending the pass there, as a kill would), the controller is abandoned with its agents left running as real child
 * processes, and a second controller on the same state file takes over (or none does).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";

let h: ControllerHarness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.close();
});

/** What a kill point throws: the pass ends there, as if the process had been killed. */
class Killed extends Error {}
const kill = (): never => {
  throw new Killed("killed here");
};

describe("a controller killed while starting an attempt", () => {
  // Before: the exit file was read only when the state file had a record of the attempt, so an agent that finished
  // (reward acknowledged, exit 0) after its controller died before saving the record was failed as lost.
  it("reports the exit of an agent spawned just before the kill, with no state record", async () => {
    const [rollout] = await h.create([{ rollout_id: "done", input: {}, config: { local: { command: ["true"] } } }]);
    const killed = h.controllerWith({ afterSpawn: kill });
    await expect(killed.reconcileOnce()).rejects.toThrow(Killed);
    await killed.abandon();
    const exitFile = join(h.dir, "exits", "done.0.exit");
    await h.waitFor("the agent's exit file", () => (existsSync(exitFile) ? true : undefined));

    h.controller().start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.state).toBe("succeeded");
    expect(done!.status.error_message).toBeNull();
  });

  it("adopts an agent spawned just before the kill that still runs, and reports its exit", async () => {
    const gate = join(h.dir, "go");
    const agent = h.script("wait.sh", `#!/bin/sh\nwhile [ ! -e ${gate} ]; do sleep 0.05; done\nexit 0\n`);
    await h.create([{ rollout_id: "slow", input: {}, config: { local: { command: [agent] } } }]);
    const killed = h.controllerWith({ afterSpawn: kill });
    await expect(killed.reconcileOnce()).rejects.toThrow(Killed);
    await killed.abandon();
    await h.waitFor("the start marker's pid", () =>
      existsSync(join(h.dir, "exits", "slow.0.exit.pid")) ? true : undefined,
    );

    const second = h.controller();
    await second.reconcileOnce();
    expect(second.liveCount).toBe(1);
    expect((await h.client.getRollout("slow")).rollout.status.state).toBe("running");
    h.script("go", "");
    second.start();
    const [done] = await h.waitTerminal(["slow"]);
    expect(done!.status.state).toBe("succeeded");
  });

  // Before: a rollout marked running whose agent was never spawned was failed "controller lost the process".
  it("starts a rollout marked running but never spawned, on the same attempt", async () => {
    await h.create([{ rollout_id: "unspawned", input: {}, config: { local: { command: ["true"] } } }]);
    const killed = h.controllerWith({ afterMarkedRunning: kill });
    await expect(killed.reconcileOnce()).rejects.toThrow(Killed);
    await killed.abandon();
    const { rollout: marked, attempts } = await h.client.getRollout("unspawned");
    expect(marked.status.state).toBe("running");
    expect(existsSync(join(h.dir, "exits", "unspawned.0.exit.pid"))).toBe(false);

    h.controller().start();
    const [done] = await h.waitTerminal(["unspawned"]);
    expect(done!.status.state).toBe("succeeded");
    expect(done!.status.last_attempt_id).toBe("0");
    expect((await h.client.getRollout("unspawned")).attempts).toEqual(attempts);
  });

  // Before: the first lease was taken one pass after the start, so a rollout whose controller died in that window was
  // never leased and stayed running for good.
  it("leases the attempt when it is marked running, so it expires when no controller comes back", async () => {
    await h.create([{ rollout_id: "orphaned", input: {}, config: { local: { command: ["true"] }, max_attempts: 1 } }]);
    const killed = h.controllerWith({ afterMarkedRunning: kill }, { lease_seconds: 1 });
    await expect(killed.reconcileOnce()).rejects.toThrow(Killed);
    await killed.abandon();

    const [expired] = await h.waitTerminal(["orphaned"], 15_000);
    expect(expired!.status.state).toBe("failed");
    expect(expired!.status.error_message).toMatch(/^lease expired/);
  });
});
