/**
 * @module The contract every `Store` passes: one suite, run by `memory.test.ts`, `sqlite.test.ts` (and later
 * `postgres.test.ts`). Each test builds its own store through `makeStore` and closes it afterwards.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  type EventCreateInput,
  EventCreateSchema,
  InvalidTransition,
  type Rollout,
  type RolloutCreateInput,
  RolloutCreateSchema,
  RolloutNotFound,
  StaleAttempt,
} from "../protocol/index.js";
import type { Store } from "./store.js";

/** Builds a fresh, empty store for one test. */
export type MakeStore = () => Store | Promise<Store>;

/** Contract cases a store may skip, each with the reason it gives. */
export interface ContractSkips {
  [caseName: string]: string;
}

/** Parses a create as the gateway would (defaults applied). */
function creates(...inputs: RolloutCreateInput[]) {
  return inputs.map((i) => RolloutCreateSchema.parse(i));
}

/** Parses event creates as the gateway would. */
function events(...inputs: EventCreateInput[]) {
  return inputs.map((i) => EventCreateSchema.parse(i));
}

/** A model_request-like event payload. */
function modelRequest(i: number): EventCreateInput {
  return { event_type: "model_request", data: { model: "m", model_version: 0, request: { i }, status: "ok" } };
}

/**
 * Registers the shared store contract under `describe(name)`.
 * @param name - the store under test, e.g. "MemoryStore"
 * @param makeStore - builds a fresh empty store for each test
 * @param skips - case name → why this store skips it (printed by vitest as a skipped test)
 */
export function runStoreContract(name: string, makeStore: MakeStore, skips: ContractSkips = {}): void {
  describe(`${name} (Store contract)`, () => {
    const open: Store[] = [];
    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close()));
    });
    async function fresh(): Promise<Store> {
      const store = await makeStore();
      open.push(store);
      return store;
    }
    const test = (caseName: string, fn: () => Promise<void>) =>
      skips[caseName] ? it.skip(`${caseName} (skipped: ${skips[caseName]})`, fn) : it(caseName, fn);

    /** Creates one rollout and moves it to running. */
    async function running(store: Store, create: RolloutCreateInput = { input: {} }): Promise<Rollout> {
      const [r] = await store.createRollouts(creates(create));
      return store.patchRollout(r!.rollout_id, { status: { state: "running" } });
    }

    describe("rollouts", () => {
      test("creates a rollout queuing at attempt 0, version 1, with defaults applied", async () => {
        const store = await fresh();
        const before = Date.now() / 1000;
        const [r] = await store.createRollouts(creates({ input: { q: "2+2" } }));
        expect(r!.rollout_id).toMatch(/^ro-[0-9a-f-]{36}$/);
        expect(r!.input).toEqual({ q: "2+2" });
        expect(r!.is_train).toBe(true);
        expect(r!.config).toEqual({ timeout_seconds: 3600, max_attempts: 1 });
        expect(r!.status).toMatchObject({ state: "queuing", last_attempt_id: "0", version: 1, error_message: null });
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

      test("create with an existing rollout_id returns the stored rollout and keeps its events", async () => {
        const store = await fresh();
        await store.createRollouts(creates({ rollout_id: "r1", input: { a: 1 }, metadata: { batch_idx: 3, x: "y" } }));
        const moved = await store.patchRollout("r1", { status: { state: "running" } });
        await store.appendEvents("r1", "0", events({ event_type: "log", data: { m: "hi" } }));
        const again = await store.createRollouts(creates({ rollout_id: "r1", input: { a: 2 } }));
        expect(again).toEqual([moved]);
        expect(again[0]!.metadata).toEqual({ batch_idx: 3, x: "y" });
        expect(await store.listEvents("r1")).toHaveLength(1);
        // The same id twice in one batch also yields one rollout.
        const twice = await store.createRollouts(
          creates({ rollout_id: "r2", input: 1 }, { rollout_id: "r2", input: 2 }),
        );
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
      });
    });

    describe("status patches", () => {
      test("a valid transition bumps version and updated_at and keeps other fields", async () => {
        const store = await fresh();
        const [r] = await store.createRollouts(creates({ rollout_id: "r1", input: { q: 1 } }));
        const p1 = await store.patchRollout("r1", { status: { state: "running", k8s_job_name: "job-1" } });
        expect(p1.status).toMatchObject({ state: "running", k8s_job_name: "job-1", version: 2, last_attempt_id: "0" });
        expect(p1.status.updated_at).toBeGreaterThanOrEqual(r!.status.updated_at);
        expect(p1.status.created_at).toBe(r!.status.created_at);
        const p2 = await store.patchRollout("r1", { status: { state: "succeeded" } });
        expect(p2.status).toMatchObject({ state: "succeeded", k8s_job_name: "job-1", version: 3 });
        expect(p2.input).toEqual({ q: 1 });
        expect(await store.getRollout("r1")).toEqual(p2);
        // An empty patch is still a patch: version grows.
        expect((await store.patchRollout("r1", {})).status.version).toBe(4);
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

      test("terminal states are final", async () => {
        const store = await fresh();
        await running(store, { rollout_id: "r1", input: 0 });
        await store.patchRollout("r1", { status: { state: "succeeded" } });
        for (const state of ["running", "failed", "queuing", "succeeded"] as const) {
          await expect(store.patchRollout("r1", { status: { state } })).rejects.toThrow(InvalidTransition);
        }
        await expect(store.patchRollout("r1", { status: { last_attempt_id: "1" } })).rejects.toThrow(InvalidTransition);
        expect((await store.getRollout("r1"))!.status).toMatchObject({ state: "succeeded", version: 3 });
      });

      test("patching an unknown rollout throws RolloutNotFound", async () => {
        const store = await fresh();
        await expect(store.patchRollout("ghost", { status: { state: "running" } })).rejects.toThrow(RolloutNotFound);
      });

      test("with max_attempts > 1 a failed attempt re-queues the rollout at the next attempt id", async () => {
        const store = await fresh();
        await running(store, { rollout_id: "r1", input: 0, config: { max_attempts: 2 } });
        await store.appendEvents("r1", "0", events({ event_type: "log", data: { n: 0 } }));
        const retried = await store.patchRollout("r1", { status: { state: "failed", error_message: "boom" } });
        expect(retried.status).toMatchObject({ state: "queuing", last_attempt_id: "1", error_message: "boom" });
        expect((await store.listTerminal(0, 10)).items).toEqual([]);
        await store.patchRollout("r1", { status: { state: "running" } });
        await store.appendEvents("r1", "1", events({ event_type: "log", data: { n: 1 } }));
        expect(await store.listAttempts("r1")).toEqual(["0", "1"]);
        // The last attempt's failure is final.
        const failed = await store.patchRollout("r1", { status: { state: "failed", error_message: "again" } });
        expect(failed.status).toMatchObject({ state: "failed", last_attempt_id: "1", error_message: "again" });
        expect((await store.listTerminal(0, 10)).items.map((i) => i.rollout_id)).toEqual(["r1"]);
      });

      test("writes to a superseded attempt throw StaleAttempt: events and a patch naming it", async () => {
        const store = await fresh();
        await running(store, { rollout_id: "r1", input: 0, config: { max_attempts: 3 } });
        await store.patchRollout("r1", { status: { state: "failed" } });
        await expect(store.appendEvents("r1", "0", events({ event_type: "log" }))).rejects.toThrow(StaleAttempt);
        await expect(store.appendEvents("r1", "7", events({ event_type: "log" }))).rejects.toThrow(StaleAttempt);
        await expect(store.patchRollout("r1", { status: { state: "running", last_attempt_id: "0" } })).rejects.toThrow(
          "Rollout r1: attempt 0 is not the current attempt (current: 1)",
        );
        expect(await store.listEvents("r1")).toEqual([]);
        expect((await store.getRollout("r1"))!.status).toMatchObject({ state: "queuing", last_attempt_id: "1" });
        // Naming the current attempt is fine.
        const ok = await store.patchRollout("r1", { status: { state: "running", last_attempt_id: "1" } });
        expect(ok.status.state).toBe("running");
      });

      test("a patch may start a new attempt id, after which the old one is stale", async () => {
        const store = await fresh();
        await running(store, { rollout_id: "r1", input: 0 });
        await store.patchRollout("r1", { status: { last_attempt_id: "5" } });
        await expect(store.appendEvents("r1", "0", events({ event_type: "log" }))).rejects.toThrow(StaleAttempt);
        await expect(store.patchRollout("r1", { status: { last_attempt_id: "0" } })).rejects.toThrow(StaleAttempt);
        expect((await store.appendEvents("r1", "5", events({ event_type: "log" })))[0]!.attempt_id).toBe("5");
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

    describe("events", () => {
      test("appends one and a batch with server timestamps and gap-free per-rollout sequences", async () => {
        const store = await fresh();
        await running(store, { rollout_id: "r1", input: 0 });
        await running(store, { rollout_id: "r2", input: 0 });
        const before = Date.now() / 1000;
        const [one] = await store.appendEvents("r1", "0", events({ event_type: "reward", data: { value: 1 } }));
        const batch = await store.appendEvents("r1", "0", events(modelRequest(1), modelRequest(2), modelRequest(3)));
        const other = await store.appendEvents("r2", "0", events(modelRequest(9)));
        const after = Date.now() / 1000;
        expect(one).toEqual({
          event_type: "reward",
          rollout_id: "r1",
          attempt_id: "0",
          timestamp: one!.timestamp,
          data: { value: 1 },
          sequence: 1,
          event_id: null,
        });
        expect(batch.map((e) => e.sequence)).toEqual([2, 3, 4]);
        expect(other[0]!.sequence).toBe(1);
        for (const e of [one!, ...batch]) {
          expect(e.timestamp).toBeGreaterThanOrEqual(before - 0.001);
          expect(e.timestamp).toBeLessThanOrEqual(after + 0.001);
        }
        expect(await store.listEvents("r1")).toEqual([one, ...batch]);
        expect(await store.countEvents()).toBe(5);
        expect(await store.appendEvents("r1", "0", [])).toEqual([]);
      });

      test("appending to an unknown rollout throws RolloutNotFound", async () => {
        const store = await fresh();
        await expect(store.appendEvents("ghost", "0", events({ event_type: "log" }))).rejects.toThrow(RolloutNotFound);
        expect(await store.listEvents("ghost")).toEqual([]);
        expect(await store.listAttempts("ghost")).toEqual([]);
      });

      test("the same event_id stores one event, across posts and within one batch", async () => {
        const store = await fresh();
        await running(store, { rollout_id: "r1", input: 0 });
        await running(store, { rollout_id: "r2", input: 0 });
        const [first] = await store.appendEvents(
          "r1",
          "0",
          events({ event_type: "log", data: { n: 1 }, event_id: "e1" }),
        );
        const [retry] = await store.appendEvents(
          "r1",
          "0",
          events({ event_type: "log", data: { n: 2 }, event_id: "e1" }),
        );
        expect(retry).toEqual(first);
        const batch = await store.appendEvents(
          "r1",
          "0",
          events(
            { event_type: "log", event_id: "e2" },
            { event_type: "log", data: { other: true }, event_id: "e2" },
            { event_type: "log" },
            { event_type: "log", event_id: "e1" },
          ),
        );
        expect(batch.map((e) => e.sequence)).toEqual([2, 2, 3, 1]);
        expect(batch[1]).toEqual(batch[0]);
        expect((await store.listEvents("r1")).map((e) => e.event_id)).toEqual(["e1", "e2", null]);
        // event_id dedupes per rollout: another rollout may use the same id.
        expect((await store.appendEvents("r2", "0", events({ event_type: "log", event_id: "e1" })))[0]!.sequence).toBe(
          1,
        );
        expect(await store.countEvents()).toBe(4);
      });

      test("listEvents filters by attempt and by type, in sequence order", async () => {
        const store = await fresh();
        await running(store, { rollout_id: "r1", input: 0, config: { max_attempts: 2 } });
        await store.appendEvents("r1", "0", events(modelRequest(1), { event_type: "reward", data: { value: 0 } }));
        await store.patchRollout("r1", { status: { state: "failed" } });
        await store.patchRollout("r1", { status: { state: "running" } });
        await store.appendEvents("r1", "1", events(modelRequest(2), { event_type: "reward", data: { value: 1 } }));
        const seqs = (es: { sequence: number }[]) => es.map((e) => e.sequence);
        expect(seqs(await store.listEvents("r1"))).toEqual([1, 2, 3, 4]);
        expect(seqs(await store.listEvents("r1", { attemptId: "1" }))).toEqual([3, 4]);
        expect(seqs(await store.listEvents("r1", { eventType: "reward" }))).toEqual([2, 4]);
        expect(seqs(await store.listEvents("r1", { attemptId: "0", eventType: "model_request" }))).toEqual([1]);
        expect(await store.listEvents("r1", { attemptId: "9" })).toEqual([]);
      });

      test("listAttempts returns attempt ids with events, oldest first", async () => {
        const store = await fresh();
        await running(store, { rollout_id: "r1", input: 0, config: { max_attempts: 3 } });
        expect(await store.listAttempts("r1")).toEqual([]);
        for (const attempt of ["0", "1", "2"]) {
          if (attempt !== "0") await store.patchRollout("r1", { status: { state: "running" } });
          await store.appendEvents("r1", attempt, events({ event_type: "log" }, { event_type: "log" }));
          if (attempt !== "2") await store.patchRollout("r1", { status: { state: "failed" } });
        }
        expect(await store.listAttempts("r1")).toEqual(["0", "1", "2"]);
      });

      test("a batch that fails part-way leaves nothing written", async () => {
        const store = await fresh();
        await running(store, { rollout_id: "r1", input: 0 });
        await store.appendEvents("r1", "0", events({ event_type: "log" }));
        // A BigInt cannot be stored as JSON: the third event fails after two were accepted.
        const bad = events(modelRequest(1), modelRequest(2), { event_type: "log", data: { n: 10n } });
        await expect(store.appendEvents("r1", "0", bad)).rejects.toThrow();
        expect((await store.listEvents("r1")).map((e) => e.sequence)).toEqual([1]);
        expect(await store.countEvents()).toBe(1);
        expect((await store.appendEvents("r1", "0", events({ event_type: "log" })))[0]!.sequence).toBe(2);
        // Same for rollout creation.
        const badCreates = creates({ rollout_id: "ok", input: 1 }, { rollout_id: "bad", input: 1 });
        (badCreates[1] as { input: unknown }).input = { n: 10n };
        await expect(store.createRollouts(badCreates)).rejects.toThrow();
        expect(await store.getRollout("ok")).toBeUndefined();
      });

      test("50 concurrent appends to one rollout lose nothing and leave sequence 1..50 gap-free", async () => {
        const store = await fresh();
        await running(store, { rollout_id: "r1", input: 0 });
        const results = await Promise.all(
          Array.from({ length: 50 }, (_, i) => store.appendEvents("r1", "0", events(modelRequest(i)))),
        );
        expect(results.map((r) => r[0]!.sequence).sort((a, b) => a - b)).toEqual(
          Array.from({ length: 50 }, (_, i) => i + 1),
        );
        const stored = await store.listEvents("r1");
        expect(stored.map((e) => e.sequence)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
        expect(new Set(stored.map((e) => (e.data.request as { i: number }).i)).size).toBe(50);
      });
    });

    describe("models and counts", () => {
      test("upserts models by (model, endpoint), lists and deletes them", async () => {
        const store = await fresh();
        const a1 = { model: "a", endpoint: "http://h1:8000/v1", version: 0 };
        const a2 = { model: "a", endpoint: "http://h2:8000/v1", version: 0 };
        const b1 = { model: "b", endpoint: "http://h1:8000/v1", version: 3 };
        expect(await store.upsertModels([b1, a2, a1])).toEqual([b1, a2, a1]);
        await store.upsertModels([{ ...a1, version: 2 }]);
        expect(await store.listModels()).toEqual([{ ...a1, version: 2 }, a2, b1]);
        expect(await store.listModels("a")).toEqual([{ ...a1, version: 2 }, a2]);
        expect(await store.listModels("zzz")).toEqual([]);
        expect(await store.deleteModels("a")).toBe(2);
        expect(await store.listModels()).toEqual([b1]);
        expect(await store.deleteModels()).toBe(1);
        expect(await store.deleteModels()).toBe(0);
      });

      test("countByState lists every state and countEvents counts all rollouts' events", async () => {
        const store = await fresh();
        expect(await store.countByState()).toEqual({ queuing: 0, running: 0, succeeded: 0, failed: 0 });
        expect(await store.countEvents()).toBe(0);
        await store.createRollouts(creates({ input: 0 }, { input: 0 }, { rollout_id: "f", input: 0 }));
        await store.patchRollout("f", { status: { state: "failed" } });
        await running(store, { rollout_id: "r", input: 0 });
        await store.appendEvents("r", "0", events(modelRequest(1), modelRequest(2)));
        expect(await store.countByState()).toEqual({ queuing: 2, running: 1, succeeded: 0, failed: 1 });
        expect(await store.countEvents()).toBe(2);
      });

      test("calls after close fail", async () => {
        const store = await fresh();
        await store.close();
        await expect(store.listRollouts()).rejects.toThrow();
      });
    });
  });
}
