/**
 * arclight's controller against a gateway that re-queued its rollout behind its back (an operator's or another
 * controller's `failed` patch started attempt 1 while the controller still ran attempt 0): on both stores.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ControllerHarness, startHarness } from "../src/controller/testing/harness.js";
import { MemoryStore } from "../src/store/memory.js";
import { SqliteStore } from "../src/store/sqlite.js";
import type { Store } from "../src/store/store.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const STORES: [string, () => Store][] = [
  ["memory", () => new MemoryStore()],
  [
    "sqlite",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "arclight-requeue-"));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      return SqliteStore.open(join(dir, "gateway.db"));
    },
  ],
];

describe.each(STORES)("controller and a re-queue it did not make (%s store)", (_name, makeStore) => {
  it("kills the superseded attempt's process, drops its outcome, and runs the new attempt to the end", async () => {
    const h: ControllerHarness = await startHarness({}, makeStore());
    cleanups.push(() => h.close());
    // Attempt 0 marks that it started and then waits; attempt 1 marks and exits 0.
    const agent = h.script(
      "agent.sh",
      '#!/bin/sh\ntouch "$MARKS/started-$AGL_ATTEMPT_ID"\n[ "$AGL_ATTEMPT_ID" = 0 ] && exec sleep 300\nexit 0\n',
    );
    const [rollout] = await h.create([
      {
        input: { marks: h.dir },
        config: { max_attempts: 2, local: { command: [agent], env_map: { MARKS: "input.marks" } } },
      },
    ]);
    const id = rollout!.rollout_id;
    h.controller().start();
    await h.waitFor("attempt 0 started", () => (existsSync(join(h.dir, "started-0")) ? true : undefined));
    // Behind the controller's back: a failed patch without an attempt id re-queues the rollout as attempt 1.
    const requeued = await h.client.patchRollout(id, { status: { state: "failed", error_message: "operator" } });
    expect(requeued.status).toMatchObject({ state: "queuing", last_attempt_id: "1" });
    const [done] = await h.waitTerminal([id]);
    expect(done!.status).toMatchObject({ state: "succeeded", last_attempt_id: "1" });
    expect(existsSync(join(h.dir, "started-1"))).toBe(true);
    // Attempt 0's exit (killed) was not reported: no log event in any attempt, the rollout's end is attempt 1's.
    expect(await h.gateway.store.listEvents(id, { eventType: "log" })).toEqual([]);
  });
});
