/** @module Store contract cases: AGL v1.0 attempt rules, superseded attempts, late events, no-op patches. */
import { describe, expect } from "vitest";
import { Conflict, InvalidTransition, StaleAttempt } from "../../protocol/index.js";
import { type ContractContext, creates, events, running } from "./contract-helpers.js";

/** Registers the attempt-rule cases of the store contract. */
export function attemptCases({ fresh, test }: ContractContext): void {
  describe("attempt rules", () => {
    test("a new rollout has no attempt yet (null) and takes events to attempt 0 while still queuing", async () => {
      // AGL's controllers start the agent before they patch `running`: its first calls reach a queuing rollout.
      const store = await fresh();
      const [r] = await store.createRollouts(creates({ rollout_id: "r1", input: 0 }));
      expect(r!.status.last_attempt_id).toBeNull();
      const [e] = await store.appendEvents("r1", "0", events({ event_type: "reward", data: { value: 1 } }));
      expect(e).toMatchObject({ attempt_id: "0", sequence: 1 });
      expect(e!.late).toBeUndefined();
      const started = await store.patchRollout("r1", { status: { state: "running", last_attempt_id: "0" } });
      expect(started.status).toMatchObject({ state: "running", last_attempt_id: "0", version: 2 });
      expect(await store.listAttempts("r1")).toEqual(["0"]);
    });

    test("an event to an attempt id never current is stored under it and leaves the current attempt alone", async () => {
      const store = await fresh();
      const before = await running(store, { rollout_id: "r1", input: 0 });
      await store.appendEvents("r1", "0", events({ event_type: "log", data: { n: 0 } }));
      const [foreign] = await store.appendEvents("r1", "hook-7", events({ event_type: "log", data: { n: 1 } }));
      expect(foreign).toMatchObject({ attempt_id: "hook-7", sequence: 2 });
      await store.appendEvents("r1", "0", events({ event_type: "log", data: { n: 2 } }));
      expect(await store.getRollout("r1")).toEqual(before);
      expect(await store.listAttempts("r1")).toEqual(["0", "hook-7"]);
      expect((await store.listEvents("r1", { attemptId: "hook-7" })).map((e) => e.data.n)).toEqual([1]);
    });

    test("a patch naming a new attempt id makes it current; the old attempt is then superseded", async () => {
      const store = await fresh();
      await running(store, { rollout_id: "r1", input: 0 });
      const moved = await store.patchRollout("r1", { status: { last_attempt_id: "b" } });
      expect(moved.status).toMatchObject({ state: "running", last_attempt_id: "b", version: 3 });
      await store.appendEvents("r1", "b", events({ event_type: "log" }));
      const stale = store.appendEvents("r1", "0", events({ event_type: "log" }));
      await expect(stale).rejects.toThrow(StaleAttempt);
      await expect(stale).rejects.toMatchObject({ currentAttemptId: "b" });
      await expect(stale).rejects.toThrow("Rollout r1: attempt 0 was superseded (current: b)");
      await expect(store.patchRollout("r1", { status: { last_attempt_id: "0" } })).rejects.toThrow(StaleAttempt);
      expect((await store.getRollout("r1"))!.status).toMatchObject({ last_attempt_id: "b", version: 3 });
    });

    test("a superseded attempt's patch cannot finish or fail the current attempt", async () => {
      // Attempt 0 failed and was retried as attempt 1; attempt 0's helper process then reports success.
      const store = await fresh();
      await running(store, { rollout_id: "r1", input: 0, config: { max_attempts: 2 } });
      await store.patchRollout("r1", { status: { state: "failed", last_attempt_id: "0" } });
      await store.patchRollout("r1", { status: { state: "running", last_attempt_id: "1" } });
      for (const state of ["succeeded", "failed"] as const) {
        const late = store.patchRollout("r1", { status: { state, last_attempt_id: "0" } });
        await expect(late).rejects.toThrow(StaleAttempt);
      }
      expect((await store.getRollout("r1"))!.status).toMatchObject({ state: "running", last_attempt_id: "1" });
      expect((await store.appendEvents("r1", "1", events({ event_type: "log" })))[0]!.attempt_id).toBe("1");
    });

    test("a patch naming a new numeric id counts retries from it", async () => {
      const store = await fresh();
      await running(store, { rollout_id: "r1", input: 0, config: { max_attempts: 3 } });
      const retried = await store.patchRollout("r1", { status: { state: "failed", last_attempt_id: "1" } });
      expect(retried.status).toMatchObject({ state: "queuing", last_attempt_id: "2" });
      for (const old of ["0", "1"]) {
        await expect(store.appendEvents("r1", old, events({ event_type: "log" }))).rejects.toThrow(StaleAttempt);
      }
    });

    test("a patch setting last_attempt_id to null throws Conflict and changes nothing", async () => {
      const store = await fresh();
      const before = await running(store, { rollout_id: "r1", input: 0 });
      await expect(store.patchRollout("r1", { status: { last_attempt_id: null } })).rejects.toThrow(Conflict);
      expect(await store.getRollout("r1")).toEqual(before);
    });

    test("a patch that changes nothing is a no-op: same version, same updated_at", async () => {
      const store = await fresh();
      const before = await running(store, { rollout_id: "r1", input: 0 });
      expect(await store.patchRollout("r1", { status: { state: "running" } })).toEqual(before);
      expect(await store.patchRollout("r1", {})).toEqual(before);
      expect(await store.patchRollout("r1", { status: { k8s_job_name: null, error_message: null } })).toEqual(before);
      expect(await store.getRollout("r1")).toEqual(before);
      // A real change in the same patch still applies and bumps the version once.
      const named = await store.patchRollout("r1", { status: { state: "running", k8s_job_name: "job-1" } });
      expect(named.status).toMatchObject({
        state: "running",
        k8s_job_name: "job-1",
        version: before.status.version + 1,
      });
      await expect(store.patchRollout("r1", { status: { state: "queuing" } })).rejects.toThrow(InvalidTransition);
    });
  });

  describe("late events", () => {
    test("events after the rollout finished are stored with late: true; earlier ones carry no late field", async () => {
      // AGL trainers flush hook rewards (on_succeeded / on_failed) after the rollout reached a terminal state.
      const store = await fresh();
      await running(store, { rollout_id: "r1", input: 0 });
      const [early] = await store.appendEvents("r1", "0", events({ event_type: "log" }));
      await store.patchRollout("r1", { status: { state: "succeeded" } });
      const [reward] = await store.appendEvents("r1", "0", events({ event_type: "reward", data: { value: 0.9 } }));
      expect(reward).toMatchObject({ attempt_id: "0", sequence: 2, late: true, data: { value: 0.9 } });
      const stored = await store.listEvents("r1");
      expect(stored).toEqual([early, reward]);
      expect("late" in stored[0]!).toBe(false);
      expect((await store.getRollout("r1"))!.status.state).toBe("succeeded");
    });

    test("after finish a replayed event_id returns the stored event; a superseded attempt is still refused", async () => {
      const store = await fresh();
      await running(store, { rollout_id: "r1", input: 0, config: { max_attempts: 2 } });
      await store.patchRollout("r1", { status: { state: "failed" } }); // retried: attempt "1"
      await store.patchRollout("r1", { status: { state: "running" } });
      const [stored] = await store.appendEvents("r1", "1", events({ event_type: "log", event_id: "e1" }));
      await store.patchRollout("r1", { status: { state: "failed" } });
      expect(await store.appendEvents("r1", "1", events({ event_type: "log", event_id: "e1" }))).toEqual([stored]);
      await expect(store.appendEvents("r1", "0", events({ event_type: "log" }))).rejects.toThrow(StaleAttempt);
      const [late] = await store.appendEvents("r1", "1", events({ event_type: "log", event_id: "e2" }));
      expect(late).toMatchObject({ sequence: 2, late: true });
      expect(await store.countEvents()).toBe(2);
    });
  });
}
