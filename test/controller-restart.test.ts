import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { killGroup, processAlive } from "../src/controller/local.js";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";

let h: ControllerHarness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.close();
});

function ownedPids(dir: string): Record<string, number> {
  const state = JSON.parse(readFileSync(join(dir, "controller-state.json"), "utf8")) as {
    processes: Record<string, { pid: number }>;
  };
  return Object.fromEntries(Object.entries(state.processes).map(([id, p]) => [id, p.pid]));
}

describe("controller restart", () => {
  it("fails running rollouts whose process is gone 'controller lost the process', adopts live ones, starts unstarted ones", async () => {
    const long = { local: { command: ["sleep", "300"] } };
    const [lostA, lostB, survivor] = await h.create([
      { rollout_id: "lost-a", input: {}, config: long },
      { rollout_id: "lost-b", input: {}, config: long },
      // The survivor keeps running across the restart; its timeout still applies under the new controller.
      { rollout_id: "survivor", input: {}, config: { ...long, timeout_seconds: 4 } },
    ]);
    const first = h.controller();
    first.start();
    const pids = await h.waitFor("3 owned processes", () => {
      try {
        const owned = ownedPids(h.dir);
        return Object.keys(owned).length === 3 ? owned : undefined;
      } catch {
        return undefined;
      }
    });
    // The first controller "crashes": its loop stops, its children live on.
    await first.abandon();
    for (const id of ["lost-a", "lost-b"]) killGroup(pids[id]!, "SIGKILL");
    await h.waitFor("killed agents gone", () =>
      processAlive(pids["lost-a"]!) || processAlive(pids["lost-b"]!) ? undefined : true,
    );
    // A rollout patched running whose process never started (crash between patch and spawn): no record, no start
    // marker. It is started now, on the same attempt (test/controller-kill-points.test.ts kills a real controller there).
    await h.create([{ rollout_id: "orphan", input: {}, config: { ...long, timeout_seconds: 4 } }]);
    await h.client.patchRollout("orphan", { status: { state: "running", last_attempt_id: "0" } });

    h.controller().start();
    const lost = await h.waitTerminal([lostA!.rollout_id, lostB!.rollout_id]);
    for (const rollout of lost) {
      expect(rollout.status.state).toBe("failed");
      expect(rollout.status.error_message).toBe("controller lost the process");
    }
    expect((await h.client.getRollout(survivor!.rollout_id)).rollout.status.state).toBe("running");
    expect(processAlive(pids.survivor!)).toBe(true);
    await h.waitFor("the orphan's agent started", () => (ownedPids(h.dir).orphan !== undefined ? true : undefined));

    const [timedOut, orphan] = await h.waitTerminal([survivor!.rollout_id, "orphan"]);
    expect(timedOut!.status.error_message).toBe("timed out after 4 s");
    expect(orphan!.status.error_message).toBe("timed out after 4 s");
    expect(orphan!.status.last_attempt_id).toBe("0");
    await h.waitFor("survivor gone", () => (processAlive(pids.survivor!) ? undefined : true), 5000);
    await h.waitFor("state file emptied", () => (Object.keys(ownedPids(h.dir)).length === 0 ? true : undefined));
  });

  it("fails an adopted rollout 'controller lost the process' when its process exits under the new controller", async () => {
    const [rollout] = await h.create([{ input: {}, config: { local: { command: ["sleep", "300"] } } }]);
    const first = h.controller();
    first.start();
    const pid = await h.waitFor("owned process", () => {
      try {
        return ownedPids(h.dir)[rollout!.rollout_id];
      } catch {
        return undefined;
      }
    });
    await first.abandon();
    const second = h.controller();
    await second.reconcileOnce();
    expect(second.liveCount).toBe(1); // adopted, not failed
    killGroup(pid, "SIGKILL");
    second.start();
    const [done] = await h.waitTerminal([rollout!.rollout_id]);
    expect(done!.status.error_message).toBe("controller lost the process");
  });

  // Kept only in the controller's memory, an agent's exit status would go with a crashed controller, and the restarted
  // one would fail rollouts that had posted a reward and exited 0 as "controller lost the process".
  it("reports the true exit status of agents that exited while no controller ran", async () => {
    const [ok, bad] = await h.create([
      { rollout_id: "exits-0", input: {}, config: { local: { command: ["sh", "-c", "sleep 1; exit 0"] } } },
      { rollout_id: "exits-3", input: {}, config: { local: { command: ["sh", "-c", "sleep 1; exit 3"] } } },
    ]);
    const first = h.controller();
    first.start();
    const pids = await h.waitFor("2 owned processes", () => {
      try {
        const owned = ownedPids(h.dir);
        return Object.keys(owned).length === 2 ? owned : undefined;
      } catch {
        return undefined;
      }
    });
    await first.abandon();
    await h.waitFor("agents exited", () => (Object.values(pids).some(processAlive) ? undefined : true), 10_000);
    h.controller().start();
    const [okDone, badDone] = await h.waitTerminal([ok!.rollout_id, bad!.rollout_id]);
    expect(okDone!.status.state).toBe("succeeded");
    expect(badDone!.status.error_message).toBe("exited with code 3");
  });
});
