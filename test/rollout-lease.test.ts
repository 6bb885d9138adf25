/**
 * Leases on running rollouts: with no controller renewing it, a leased attempt is failed (and retried when
 * attempts are left) instead of staying `running` forever; a rollout never leased (an Agent Lightning v1.0 client's)
 * never expires.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { killGroup } from "../src/controller/local.js";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";
import type { Rollout } from "../src/protocol/index.js";

let h: ControllerHarness;
beforeEach(async () => {
  h = await startHarness();
});
afterEach(async () => {
  await h.close();
});

async function rollout(id: string): Promise<Rollout> {
  return (await h.client.getRollout(id)).rollout;
}

async function running(id: string, maxAttempts = 1): Promise<void> {
  await h.create([{ rollout_id: id, input: {}, config: { max_attempts: maxAttempts } }]);
  await h.client.patchRollout(id, { status: { state: "running", last_attempt_id: "0" } });
}

describe("rollout leases", () => {
  it("fails a leased attempt no one renews, and retries it when the rollout has attempts left", async () => {
    await running("leased", 2);
    expect(await h.client.renewLeases([{ rollout_id: "leased", attempt_id: "0" }], 1)).toEqual({
      renewed: ["leased"],
      rejected: [],
    });
    const retried = await h.waitFor("retried", async () => {
      const r = await rollout("leased");
      return r.status.state === "queuing" ? r : undefined;
    });
    expect(retried.status.last_attempt_id).not.toBe("0");
    const attemptId = retried.status.last_attempt_id!;
    await h.client.patchRollout("leased", { status: { state: "running", last_attempt_id: attemptId } });
    await h.client.renewLeases([{ rollout_id: "leased", attempt_id: attemptId }], 1);
    const [failed] = await h.waitTerminal(["leased"], 10_000);
    expect(failed!.status.state).toBe("failed");
    expect(failed!.status.error_message).toMatch(/^lease expired/);
  });

  it("keeps a rollout whose lease is renewed in time running", async () => {
    await running("renewed");
    for (let i = 0; i < 6; i++) {
      await h.client.renewLeases([{ rollout_id: "renewed", attempt_id: "0" }], 1);
      await delay(400);
    }
    expect((await rollout("renewed")).status.state).toBe("running");
  });

  it("never expires a rollout that was never leased (Agent Lightning v1.0 clients)", async () => {
    await running("agl");
    await running("leased-beside", 1);
    await h.client.renewLeases([{ rollout_id: "leased-beside", attempt_id: "0" }], 0.5);
    await h.waitTerminal(["leased-beside"], 10_000); // the sweep ran and expired the leased one
    expect((await rollout("agl")).status.state).toBe("running");
  });

  it("rejects a lease for an attempt that is not the running one", async () => {
    await running("moved");
    expect(await h.client.renewLeases([{ rollout_id: "moved", attempt_id: "7" }], 5)).toEqual({
      renewed: [],
      rejected: ["moved"],
    });
    await h.create([{ rollout_id: "queued", input: {} }]);
    expect((await h.client.renewLeases([{ rollout_id: "queued", attempt_id: "0" }], 5)).rejected).toEqual(["queued"]);
  });

  // Without leases, the `running` rollouts of a controller that died would stay running forever.
  it("fails the rollouts of a controller that died, once their lease runs out", async () => {
    await h.create([{ rollout_id: "orphaned", input: {}, config: { local: { command: ["sleep", "300"] } } }]);
    const controller = h.controller({ lease_seconds: 1 });
    controller.start();
    await h.waitFor("running", async () => ((await rollout("orphaned")).status.state === "running" ? true : undefined));
    await delay(1500); // passes run every second: the lease has been granted and renewed
    expect((await rollout("orphaned")).status.state).toBe("running");
    await controller.abandon(); // the controller "crashes"; its agent lives on
    const pid = ownedPid(h.dir, "orphaned");
    try {
      const [failed] = await h.waitTerminal(["orphaned"], 10_000);
      expect(failed!.status.error_message).toMatch(/^lease expired/);
    } finally {
      killGroup(pid, "SIGKILL");
    }
  });
});

function ownedPid(dir: string, rolloutId: string): number {
  const state = JSON.parse(readFileSync(join(dir, "controller-state.json"), "utf8")) as {
    processes: Record<string, { pid: number }>;
  };
  return state.processes[rolloutId]!.pid;
}
