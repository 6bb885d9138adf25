import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { RolloutCreateSchema, StoreUnavailable } from "../protocol/index.js";
import { tempDir } from "../testing/temp-dir.js";
import { SqliteStore } from "./sqlite.js";
import { holdSqliteLock } from "./testing/sqlite-lock-holder.js";

/** Samples the event loop every 10 ms; `stop()` returns the longest gap between two samples, ms. */
function watchLoop(): { stop(): number } {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 10);
  return {
    stop() {
      clearInterval(timer);
      return worst;
    },
  };
}

async function storeWithRollout(lockWaitMs?: number): Promise<{ store: SqliteStore; path: string }> {
  const path = join(tempDir("arclight-sqlite-lock-"), "gateway.db");
  const store = SqliteStore.open(path, { lockWaitMs });
  await store.createRollouts([RolloutCreateSchema.parse({ rollout_id: "r", input: {} })]);
  return { store, path };
}

describe("SQLite store while another process holds the write lock (BEGIN IMMEDIATE)", () => {
  // Waiting inside SQLite's busy handler would sleep Node's only thread: with a 10 s busy_timeout, a lock held 11.5 s
  // froze /healthz for 19.8 s.
  it("waits for the lock on a timer: the event loop stays free and the append commits once the lock is released", async () => {
    const { store, path } = await storeWithRollout();
    const holder = await holdSqliteLock(path);
    const loop = watchLoop();
    let settled = false;
    const append = store.appendEvents("r", "0", [{ event_type: "log", data: { n: 1 } }]);
    void append.then(
      () => (settled = true),
      () => (settled = true),
    );
    const patch = store.patchRollout("r", { status: { state: "running" } });
    await delay(1500); // the lock stays held this long
    expect(settled).toBe(false);
    const worstGapMs = loop.stop();
    await holder.release();
    const [event] = await append;
    expect(event!.sequence).toBe(1);
    expect((await patch).status.state).toBe("running");
    // Blocking waits would show a gap of the whole 1.5 s hold; timer retries leave only scheduling noise.
    expect(worstGapMs).toBeLessThan(300);
    await store.close();
  });

  it("fails writes with StoreUnavailable (retry_after_seconds) after lockWaitMs, storing nothing", async () => {
    const { store, path } = await storeWithRollout(300);
    const holder = await holdSqliteLock(path);
    const append = store.appendEvents("r", "0", [{ event_type: "log", data: { n: 1 } }]);
    const patch = store.patchRollout("r", { status: { state: "running" } });
    const [appendError, patchError] = await Promise.all([append.catch((e) => e), patch.catch((e) => e)]);
    expect(appendError).toBeInstanceOf(StoreUnavailable);
    expect(appendError.fields.retry_after_seconds).toBe(1);
    expect(appendError.message).toMatch(/locked by another connection/);
    expect(patchError).toBeInstanceOf(StoreUnavailable);
    await holder.release();
    expect(await store.listEvents("r")).toEqual([]);
    expect((await store.getRollout("r"))!.status.state).toBe("queuing");
    await store.close();
  });

  it("keeps call order across a busy wait: an append queued before a patch commits before it", async () => {
    const { store, path } = await storeWithRollout();
    await store.patchRollout("r", { status: { state: "running" } });
    const holder = await holdSqliteLock(path);
    const append = store.appendEvents("r", "0", [{ event_type: "reward", data: { value: 1 } }]);
    // Terminal rollouts store new events as `late`: had the patch overtaken the append, the reward would be late.
    const patch = store.patchRollout("r", { status: { state: "succeeded" } });
    await delay(200);
    await holder.release();
    const [event] = await append;
    await patch;
    expect(event!.late).toBeUndefined();
    await store.close();
  });
});
