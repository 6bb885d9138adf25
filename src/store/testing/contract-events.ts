/** @module Store contract cases: events (sequence, event_id, filters, atomicity, concurrency), models, counts. */
import { describe, expect } from "vitest";
import { RolloutNotFound } from "../../protocol/index.js";
import { type ContractContext, creates, events, modelRequest, running } from "./contract-helpers.js";

/** Registers the event, model and count cases of the store contract. */
export function eventCases({ fresh, test }: ContractContext): void {
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
      // Even another type and payload: a repeated id is taken to be a retry, and answered with what was stored.
      const [changed] = await store.appendEvents(
        "r1",
        "0",
        events({ event_type: "reward", data: { value: 1 }, event_id: "e1" }),
      );
      expect(changed).toEqual(first);
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
      expect((await store.appendEvents("r2", "0", events({ event_type: "log", event_id: "e1" })))[0]!.sequence).toBe(1);
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

    test("an event given with dataJson (its data already as JSON text) reads back as that data", async () => {
      const store = await fresh();
      await running(store, { rollout_id: "r1", input: 0 });
      const data = { model: "m", request: { messages: [{ content: "\u2019 \u{1F600}" }] }, big: 2 ** 60 };
      const [event] = events({ event_type: "model_request", data });
      const [appended] = await store.appendEvents("r1", "0", [{ ...event!, dataJson: JSON.stringify(data, null, 1) }]);
      expect(appended!.data).toEqual(data);
      expect((await store.listEvents("r1"))[0]!.data).toEqual(data);
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

  describe("events: appends in one tick (SQLite group-commits them in one transaction)", () => {
    test("appends to many rollouts called in one tick all land; each bad one fails alone", async () => {
      const store = await fresh();
      const ids = Array.from({ length: 20 }, (_, i) => `r${i}`);
      for (const id of ids) await running(store, { rollout_id: id, input: 0, config: { max_attempts: 2 } });
      await running(store, { rollout_id: "done", input: 0 });
      await store.patchRollout("done", { status: { state: "succeeded" } });
      await store.patchRollout("r19", { status: { state: "failed" } }); // retried: attempt "0" is now stale
      await store.appendEvents("r0", "0", events({ event_type: "log", event_id: "seen" }));
      // All called before any settles: good appends (two per rollout, one an event_id replay) between bad ones.
      const calls = [
        ...ids.slice(0, 19).map((id) => store.appendEvents(id, "0", events(modelRequest(1)))),
        store.appendEvents("done", "0", events(modelRequest(2))),
        store.appendEvents("r19", "0", events(modelRequest(3))),
        store.appendEvents("ghost", "0", events(modelRequest(4))),
        store.appendEvents("r5", "0", events(modelRequest(5), { event_type: "log", data: { n: 10n } })),
        store.appendEvents("r0", "0", events({ event_type: "log", event_id: "seen" }, modelRequest(6))),
        ...ids.slice(0, 19).map((id) => store.appendEvents(id, "0", events(modelRequest(7)))),
      ];
      const settled = await Promise.allSettled(calls);
      const reasons = settled.map((s) => (s.status === "rejected" ? (s.reason as Error).name : "ok"));
      expect(reasons.slice(19, 23)).toEqual(["ok", "StaleAttempt", "RolloutNotFound", "TypeError"]);
      expect(reasons.filter((r) => r === "ok")).toHaveLength(40);
      // A read right after the promises settled sees every committed event, in call order, gap-free.
      for (const id of ids.slice(0, 19)) {
        const stored = await store.listEvents(id);
        const is = stored.map((e) => (e.data.request as { i: number } | undefined)?.i ?? e.event_id);
        expect(is).toEqual(id === "r0" ? ["seen", 1, 6, 7] : [1, 7]);
        expect(stored.map((e) => e.sequence)).toEqual(Array.from(stored, (_, i) => i + 1));
      }
      const r0 = (settled[23] as PromiseFulfilledResult<{ sequence: number }[]>).value;
      expect(r0.map((e) => e.sequence)).toEqual([1, 3]); // the replay answers the stored event
      expect((await store.listEvents("done")).map((e) => e.late)).toEqual([true]); // finished: stored late
      expect(await store.listEvents("r19", { attemptId: "0" })).toEqual([]);
      expect(await store.countEvents()).toBe(1 + 19 + 1 + 19 + 1);
    });
  });

  describe("models and counts", () => {
    test("keeps a model's proxy mode, tokenizer folder and parsers across upserts that leave them out", async () => {
      const store = await fresh();
      const tito = {
        model: "t",
        endpoint: "http://h1:8000/v1",
        version: 1,
        mode: "tito" as const,
        tokenizer: "/m/tok",
        tool_parser: "none" as const,
        reasoning_parser: "qwen3" as const,
      };
      expect(await store.upsertModels([tito])).toEqual([tito]);
      expect(await store.listModels("t")).toEqual([tito]);
      // A trainer re-registering its endpoint at a new policy version names no mode: the model stays tito.
      expect(await store.upsertModels([{ model: "t", endpoint: tito.endpoint, version: 2 }])).toEqual([
        { ...tito, version: 2 },
      ]);
      await store.upsertModels([{ model: "t", endpoint: tito.endpoint, version: 3, mode: "passthrough" }]);
      const [back] = await store.listModels("t");
      expect(back?.mode).toBeUndefined();
      expect(back?.version).toBe(3);
      // A parser named again replaces the stored one.
      await store.upsertModels([{ model: "t", endpoint: tito.endpoint, version: 4, reasoning_parser: "deepseek_r1" }]);
      expect((await store.listModels("t"))[0]?.reasoning_parser).toBe("deepseek_r1");
    });

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

    test("revision changes after every rollout or model write, and not after appends or reads", async () => {
      const store = await fresh();
      const changes = async (write: () => Promise<unknown>): Promise<boolean> => {
        const before = store.revision();
        await write().catch(() => undefined);
        return store.revision() !== before;
      };
      expect(await changes(() => store.createRollouts(creates({ rollout_id: "r", input: 0 })))).toBe(true);
      expect(await changes(() => store.patchRollout("r", { status: { state: "running" } }))).toBe(true);
      expect(await changes(() => store.appendEvents("r", "0", events(modelRequest(1))))).toBe(false);
      expect(await changes(() => store.getRollout("r"))).toBe(false);
      expect(await changes(() => store.listModels())).toBe(false);
      expect(await changes(() => store.upsertModels([{ model: "m", endpoint: "http://h/v1", version: 1 }]))).toBe(true);
      expect(await changes(() => store.deleteModels("m"))).toBe(true);
      expect(await changes(() => store.deleteRollout("r"))).toBe(true);
    });

    test("calls after close fail", async () => {
      const store = await fresh();
      await store.close();
      await expect(store.listRollouts()).rejects.toThrow();
    });
  });
}
