/** @module Store contract cases: rollouts, status patches and attempts, delete, terminal cursor. */
import { describe, expect } from "vitest";
import {
  InvalidTransition,
  type Rollout,
  RolloutFinished,
  RolloutNotFound,
  StaleAttempt,
} from "../../protocol/index.js";
import { type ContractContext, creates, events, modelRequest, running } from "./contract-helpers.js";

/** Registers the rollout, status patch, delete and terminal cursor cases of the store contract. */
export function rolloutCases({ fresh, test }: ContractContext): void {
  describe("rollouts", () => {
    test("creates a rollout queuing with no attempt yet, version 1, with defaults applied", async () => {
      const store = await fresh();
      const before = Date.now() / 1000;
      const [r] = await store.createRollouts(creates({ input: { q: "2+2" } }));
      expect(r!.rollout_id).toMatch(/^ro-[0-9a-f-]{36}$/);
      expect(r!.input).toEqual({ q: "2+2" });
      expect(r!.is_train).toBe(true);
      expect(r!.config).toEqual({ timeout_seconds: 3600, max_attempts: 1, local: null, k8s: null });
      expect(r!.status).toMatchObject({ state: "queuing", last_attempt_id: null, version: 1, error_message: null });
      expect(r!.status.created_at).toBeGreaterThanOrEqual(before - 1);
      expect(r!.status.updated_at).toBe(r!.status.created_at);
      expect(await store.getRollout(r!.rollout_id)).toEqual(r);
    });

    test("generates a distinct id for every create without one", async () => {
      const store = await fresh();
      const made = await store.createRollouts(creates({ input: 1 }, { input: 2 }, { input: 3 }));
      expect(new Set(made.map((r) => r.rollout_id)).size).toBe(3);
      expect(made.map((r) => r.input)).toEqual([1, 2, 3]);
    });

    test("metadata answers batch_idx and sample_idx_in_batch, null when unset (Agent Lightning v1.0)", async () => {
      const store = await fresh();
      await store.createRollouts(
        creates(
          { rollout_id: "bare", input: 1 },
          { rollout_id: "set", input: 2, metadata: { sample_idx_in_batch: 4 } },
        ),
      );
      expect((await store.getRollout("bare"))!.metadata).toEqual({ batch_idx: null, sample_idx_in_batch: null });
      expect((await store.getRollout("set"))!.metadata).toEqual({ batch_idx: null, sample_idx_in_batch: 4 });
      expect((await store.listRollouts()).map((r) => r.metadata.batch_idx)).toEqual([null, null]);
    });

    test("create with an existing rollout_id returns the stored rollout and keeps its events", async () => {
      const store = await fresh();
      await store.createRollouts(creates({ rollout_id: "r1", input: { a: 1 }, metadata: { batch_idx: 3, x: "y" } }));
      const moved = await store.patchRollout("r1", { status: { state: "running" } });
      await store.appendEvents("r1", "0", events({ event_type: "log", data: { m: "hi" } }));
      const again = await store.createRollouts(creates({ rollout_id: "r1", input: { a: 2 } }));
      expect(again).toEqual([moved]);
      expect(again[0]!.metadata).toEqual({ batch_idx: 3, sample_idx_in_batch: null, x: "y" });
      expect(await store.listEvents("r1")).toHaveLength(1);
      // The same id twice in one batch also yields one rollout.
      const twice = await store.createRollouts(creates({ rollout_id: "r2", input: 1 }, { rollout_id: "r2", input: 2 }));
      expect(twice[1]).toEqual(twice[0]);
      expect((await store.listRollouts()).map((r) => r.rollout_id)).toEqual(["r1", "r2"]);
    });

    test("keeps any JSON input, including null, arrays and nested objects", async () => {
      const store = await fresh();
      const inputs = [null, [1, "two", { three: 3 }], { deep: { list: [true, false, null], n: 1.5 } }, "text"];
      const made = await store.createRollouts(creates(...inputs.map((input) => ({ input }))));
      for (const [i, r] of made.entries()) expect((await store.getRollout(r.rollout_id))!.input).toEqual(inputs[i]);
    });

    test("getRollout of an unknown id is undefined; returned objects are copies", async () => {
      const store = await fresh();
      expect(await store.getRollout("nope")).toBeUndefined();
      const [r] = await store.createRollouts(creates({ rollout_id: "r1", input: { a: 1 } }));
      (r!.input as { a: number }).a = 99;
      r!.status.state = "failed";
      expect(await store.getRollout("r1")).toMatchObject({ input: { a: 1 }, status: { state: "queuing" } });
    });

    test("lists by states, is_train, limit and offset, in creation order", async () => {
      const store = await fresh();
      await store.createRollouts(
        creates(
          { rollout_id: "a", input: 0 },
          { rollout_id: "b", input: 0, is_train: false },
          { rollout_id: "c", input: 0 },
          { rollout_id: "d", input: 0 },
        ),
      );
      await store.createRollouts(creates({ rollout_id: "e", input: 0, is_train: false }));
      await store.patchRollout("c", { status: { state: "running" } });
      await store.patchRollout("d", { status: { state: "failed" } });
      const ids = (rs: Rollout[]) => rs.map((r) => r.rollout_id);
      expect(ids(await store.listRollouts())).toEqual(["a", "b", "c", "d", "e"]);
      expect(ids(await store.listRollouts({ states: ["queuing"] }))).toEqual(["a", "b", "e"]);
      expect(ids(await store.listRollouts({ states: ["running", "failed"] }))).toEqual(["c", "d"]);
      expect(ids(await store.listRollouts({ states: [] }))).toEqual(["a", "b", "c", "d", "e"]);
      expect(ids(await store.listRollouts({ isTrain: false }))).toEqual(["b", "e"]);
      expect(ids(await store.listRollouts({ states: ["queuing"], isTrain: true }))).toEqual(["a"]);
      expect(ids(await store.listRollouts({ limit: 2 }))).toEqual(["a", "b"]);
      expect(ids(await store.listRollouts({ limit: 2, offset: 2 }))).toEqual(["c", "d"]);
      expect(ids(await store.listRollouts({ offset: 4 }))).toEqual(["e"]);
      expect(ids(await store.listRollouts({ states: ["queuing"], limit: 1, offset: 1 }))).toEqual(["b"]);
      expect(ids(await store.listRollouts({ states: ["running", "running"] }))).toEqual(["c"]);
      expect(await store.listRollouts({ limit: 0 })).toEqual([]);
    });
  });

  describe("status patches", () => {
    test("a valid transition bumps version and updated_at and keeps other fields", async () => {
      const store = await fresh();
      const [r] = await store.createRollouts(creates({ rollout_id: "r1", input: { q: 1 } }));
      const p1 = await store.patchRollout("r1", { status: { state: "running", k8s_job_name: "job-1" } });
      expect(p1.status).toMatchObject({ state: "running", k8s_job_name: "job-1", version: 2, last_attempt_id: null });
      expect(p1.status.updated_at).toBeGreaterThanOrEqual(r!.status.updated_at);
      expect(p1.status.created_at).toBe(r!.status.created_at);
      const p2 = await store.patchRollout("r1", { status: { state: "succeeded" } });
      expect(p2.status).toMatchObject({ state: "succeeded", k8s_job_name: "job-1", version: 3 });
      expect(p2.input).toEqual({ q: 1 });
      expect(await store.getRollout("r1")).toEqual(p2);
    });

    test("a forbidden transition throws InvalidTransition and changes nothing", async () => {
      const store = await fresh();
      await store.createRollouts(creates({ rollout_id: "r1", input: 0 }));
      await expect(store.patchRollout("r1", { status: { state: "succeeded" } })).rejects.toThrow(InvalidTransition);
      await store.patchRollout("r1", { status: { state: "running" } });
      await expect(store.patchRollout("r1", { status: { state: "queuing" } })).rejects.toThrow(
        "Rollout r1: cannot transition running -> queuing",
      );
      expect((await store.getRollout("r1"))!.status).toMatchObject({ state: "running", version: 2 });
    });

    test("terminal states are final: every patch, even one without a state, throws RolloutFinished", async () => {
      const store = await fresh();
      await running(store, { rollout_id: "r1", input: 0 });
      await store.patchRollout("r1", { status: { state: "succeeded" } });
      for (const state of ["running", "failed", "queuing", "succeeded"] as const) {
        await expect(store.patchRollout("r1", { status: { state } })).rejects.toThrow(RolloutFinished);
      }
      await expect(store.patchRollout("r1", { status: { error_message: "late" } })).rejects.toThrow(
        "Rollout r1 is succeeded: no more writes",
      );
      await expect(store.patchRollout("r1", { status: { k8s_job_name: "j" } })).rejects.toThrow(RolloutFinished);
      await expect(store.patchRollout("r1", { status: { last_attempt_id: "0" } })).rejects.toThrow(RolloutFinished);
      await expect(store.patchRollout("r1", {})).rejects.toThrow(RolloutFinished);
      expect((await store.getRollout("r1"))!.status).toMatchObject({
        state: "succeeded",
        version: 3,
        error_message: null,
      });
    });

    test("patching an unknown rollout throws RolloutNotFound", async () => {
      const store = await fresh();
      await expect(store.patchRollout("ghost", { status: { state: "running" } })).rejects.toThrow(RolloutNotFound);
    });

    test("with max_attempts > 1 a failed attempt re-queues the rollout at the next attempt id", async () => {
      const store = await fresh();
      await running(store, { rollout_id: "r1", input: 0, config: { max_attempts: 2 } });
      await store.patchRollout("r1", { status: { k8s_job_name: "job-0" } });
      await store.appendEvents("r1", "0", events({ event_type: "log", data: { n: 0 } }));
      const retried = await store.patchRollout("r1", { status: { state: "failed", error_message: "boom" } });
      expect(retried.status).toMatchObject({ state: "queuing", last_attempt_id: "1", error_message: "boom" });
      expect(retried.status.k8s_job_name).toBeNull(); // the old attempt's job is not the new attempt's
      expect((await store.listTerminal(0, 10)).items).toEqual([]);
      await store.patchRollout("r1", { status: { state: "running" } });
      await store.appendEvents("r1", "1", events({ event_type: "log", data: { n: 1 } }));
      expect(await store.listAttempts("r1")).toEqual(["0", "1"]);
      // The last attempt's failure is final.
      const failed = await store.patchRollout("r1", { status: { state: "failed", error_message: "again" } });
      expect(failed.status).toMatchObject({ state: "failed", last_attempt_id: "1", error_message: "again" });
      expect((await store.listTerminal(0, 10)).items.map((i) => i.rollout_id)).toEqual(["r1"]);
    });

    test("only a running attempt's failure is retried: a queuing rollout patched to failed fails", async () => {
      const store = await fresh();
      await store.createRollouts(creates({ rollout_id: "r1", input: 0, config: { max_attempts: 3 } }));
      const failed = await store.patchRollout("r1", { status: { state: "failed" } });
      expect(failed.status).toMatchObject({ state: "failed", last_attempt_id: null });
      expect((await store.listTerminal(0, 10)).items.map((i) => i.rollout_id)).toEqual(["r1"]);
    });

    test("writes to a superseded attempt throw StaleAttempt: events and a patch naming it", async () => {
      const store = await fresh();
      await running(store, { rollout_id: "r1", input: 0, config: { max_attempts: 3 } });
      await store.patchRollout("r1", { status: { state: "failed" } });
      await expect(store.appendEvents("r1", "0", events({ event_type: "log" }))).rejects.toThrow(StaleAttempt);
      await expect(store.patchRollout("r1", { status: { state: "running", last_attempt_id: "0" } })).rejects.toThrow(
        "Rollout r1: attempt 0 was superseded (current: 1)",
      );
      expect(await store.listEvents("r1")).toEqual([]);
      expect((await store.getRollout("r1"))!.status).toMatchObject({ state: "queuing", last_attempt_id: "1" });
      // Naming the current attempt is fine.
      const ok = await store.patchRollout("r1", { status: { state: "running", last_attempt_id: "1" } });
      expect(ok.status.state).toBe("running");
    });

    test("naming the current attempt is a no-op on the attempt; the retry rule counts from it", async () => {
      const store = await fresh();
      await running(store, { rollout_id: "r1", input: 0, config: { max_attempts: 3 } });
      const named = await store.patchRollout("r1", { status: { last_attempt_id: "0" } });
      expect(named.status.last_attempt_id).toBe("0");
      const retried = await store.patchRollout("r1", { status: { state: "failed", last_attempt_id: "0" } });
      expect(retried.status).toMatchObject({ state: "queuing", last_attempt_id: "1" });
    });
  });

  describe("delete", () => {
    test("deletes a rollout with its events and terminal entry; false when missing", async () => {
      const store = await fresh();
      await running(store, { rollout_id: "r1", input: 0 });
      await running(store, { rollout_id: "r2", input: 0 });
      await store.appendEvents("r1", "0", events(modelRequest(1), modelRequest(2)));
      await store.appendEvents("r2", "0", events(modelRequest(3)));
      await store.patchRollout("r1", { status: { state: "succeeded" } });
      expect(await store.deleteRollout("r1")).toBe(true);
      expect(await store.getRollout("r1")).toBeUndefined();
      expect(await store.listEvents("r1")).toEqual([]);
      expect(await store.listAttempts("r1")).toEqual([]);
      expect(await store.countEvents()).toBe(1);
      expect(await store.listTerminal(0, 10)).toEqual({ items: [], next_after: 0, total_terminal: 0 });
      expect(await store.deleteRollout("r1")).toBe(false);
      expect(await store.deleteRollout("never")).toBe(false);
      // The id is free again: a new rollout under it starts clean.
      const [again] = await store.createRollouts(creates({ rollout_id: "r1", input: "new" }));
      expect(again!.status.version).toBe(1);
      await store.patchRollout("r1", { status: { state: "running" } });
      expect((await store.appendEvents("r1", "0", events({ event_type: "log" })))[0]!.sequence).toBe(1);
    });
  });

  describe("terminal cursor", () => {
    test("lists rollouts once, in the order they became terminal, with after/limit/next_after/total", async () => {
      const store = await fresh();
      await store.createRollouts(
        creates(
          { rollout_id: "a", input: { data_id: "d1" } },
          { rollout_id: "b", input: { instance_id: 7 }, is_train: false },
          { rollout_id: "c", input: "plain" },
          { rollout_id: "d", input: 0 },
        ),
      );
      await store.patchRollout("c", { status: { state: "failed" } });
      await running(store, { rollout_id: "a", input: 0 });
      await store.patchRollout("a", { status: { state: "succeeded" } });
      await running(store, { rollout_id: "b", input: 0 });
      await store.patchRollout("b", { status: { state: "failed" } });
      const all = await store.listTerminal(0, 100);
      expect(all.items).toEqual([
        { rollout_id: "c", state: "failed", data_id: "", is_train: true },
        { rollout_id: "a", state: "succeeded", data_id: "d1", is_train: true },
        { rollout_id: "b", state: "failed", data_id: "7", is_train: false },
      ]);
      expect(all.total_terminal).toBe(3);
      const page1 = await store.listTerminal(0, 2);
      expect(page1.items.map((i) => i.rollout_id)).toEqual(["c", "a"]);
      const page2 = await store.listTerminal(page1.next_after, 2);
      expect(page2.items.map((i) => i.rollout_id)).toEqual(["b"]);
      const page3 = await store.listTerminal(page2.next_after, 2);
      expect(page3).toEqual({ items: [], next_after: page2.next_after, total_terminal: 3 });
      expect(page2.next_after).toBeGreaterThan(page1.next_after);
    });

    test("positions are never reused after a delete; deleted rollouts drop out", async () => {
      const store = await fresh();
      await store.createRollouts(creates({ rollout_id: "a", input: 0 }, { rollout_id: "b", input: 0 }));
      await store.patchRollout("a", { status: { state: "failed" } });
      const first = await store.listTerminal(0, 10);
      await store.deleteRollout("a");
      await store.patchRollout("b", { status: { state: "failed" } });
      const after = await store.listTerminal(first.next_after, 10);
      // A consumer that already read "a" still sees "b" as new.
      expect(after.items.map((i) => i.rollout_id)).toEqual(["b"]);
      expect(after.next_after).toBeGreaterThan(first.next_after);
      expect(after.total_terminal).toBe(1);
    });
  });
}
