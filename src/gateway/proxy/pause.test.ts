import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../store/postgres.js";
import { PostgresServer, skipWithoutPostgres } from "../../testing/postgres-server.js";
import { PauseController } from "./pause.js";

/** A clock the test moves by hand. */
function manualClock(startMs = Date.UTC(2026, 0, 1)) {
  const clock = { nowMs: startMs, read: () => clock.nowMs };
  return clock;
}

describe("PauseController lease (one gateway)", () => {
  it("a pause without a lease is still in force an hour later", async () => {
    const clock = manualClock();
    const pause = new PauseController(undefined, clock.read);
    await pause.setPaused({ paused: true, retry_after_seconds: 5, reason: "sync" });
    clock.nowMs += 3_600_000;
    expect(pause.tryEnter()).toBeNull();
    expect(pause.state()).toMatchObject({ paused: true, reason: "sync", lease_expires_at: null });
  });

  it("a leased pause ends at its expiry and tells the listener once", async () => {
    const clock = manualClock();
    const pause = new PauseController(undefined, clock.read);
    const expired: (string | null)[] = [];
    pause.onLeaseExpired((reason) => expired.push(reason));
    await pause.setPaused({ paused: true, retry_after_seconds: 5, reason: "sync", lease_seconds: 60 });
    clock.nowMs += 59_999;
    expect(pause.state().paused).toBe(true);
    clock.nowMs += 1;
    expect(pause.state()).toMatchObject({ paused: false, lease_expires_at: null });
    pause.state();
    expect(expired).toEqual(["sync"]);
  });
});

describe.skipIf(skipWithoutPostgres())("PauseController lease shared on PostgreSQL", () => {
  let server: PostgresServer;
  const open: PostgresStore[] = [];
  beforeAll(async () => {
    server = await PostgresServer.start();
  });
  afterAll(() => server?.stop());
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });

  /** Two replicas' pause controllers on one fresh database, each with its own hand-moved clock. */
  async function replicas() {
    const url = await server.createDatabase();
    const stores = await Promise.all([PostgresStore.open(url), PostgresStore.open(url)]);
    open.push(...stores);
    const clocks = [manualClock(), manualClock()];
    const pauses = await Promise.all(
      stores.map(async (store, i) => new PauseController(await store.sharedPause(), clocks[i]!.read)),
    );
    return { pauses, clocks };
  }

  async function until(check: () => boolean, timeoutMs = 5000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    return check();
  }

  it("a pause without a lease taken on one replica holds on both past 300 s", async () => {
    const { pauses, clocks } = await replicas();
    await pauses[0]!.setPaused({ paused: true, retry_after_seconds: 9, reason: "sync" });
    expect(await until(() => pauses[1]!.state().paused)).toBe(true);
    for (const clock of clocks) clock.nowMs += 301_000;
    for (const pause of pauses) {
      expect(pause.tryEnter()).toBeNull();
      expect(pause.state()).toMatchObject({ paused: true, reason: "sync", lease_expires_at: null });
    }
    await pauses[1]!.setPaused({ paused: false, retry_after_seconds: 0, reason: null });
    expect(await until(() => !pauses[0]!.state().paused)).toBe(true);
  });

  it("a leased pause taken on one replica ends on the other at its expiry", async () => {
    const { pauses, clocks } = await replicas();
    await pauses[0]!.setPaused({ paused: true, retry_after_seconds: 9, reason: "sync", lease_seconds: 300 });
    expect(await until(() => pauses[1]!.state().paused)).toBe(true);
    clocks[1]!.nowMs += 300_000;
    expect(pauses[1]!.state()).toMatchObject({ paused: false, lease_expires_at: null });
    // Replica 1 wrote the resume for all: replica 0 applies it without its own clock moving.
    expect(await until(() => !pauses[0]!.state().paused)).toBe(true);
  });
});
