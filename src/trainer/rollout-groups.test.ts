import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../gateway/client.js";
import { startTestGateway, type TestGateway } from "../gateway/testing/serve.js";
import { RolloutCreateSchema } from "../protocol/index.js";
import { MemoryStore } from "../store/memory.js";
import { parseTrainerConfig } from "./config.js";
import { GroupTracker, groupCreates, planGroup } from "./rollout-groups.js";

let gateway: TestGateway | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

describe("rollout groups", () => {
  const fields = { dataIndex: 3, input: { q: "1+1" }, isTrain: true, batchIdx: 5, launchVersion: 2 };

  it("pre-assigns ids and shares one data_id per group, with batch metadata and config.local", () => {
    const config = parseTrainerConfig({
      rollout_timeout_seconds: 30,
      controller: { command: ["node", "agent.mjs"], env_map: { Q: "input.q" } },
    });
    const creates = groupCreates(planGroup("run-e0-d3", fields, 3), config);
    expect(creates.map((c) => c.rollout_id)).toEqual(["run-e0-d3-0", "run-e0-d3-1", "run-e0-d3-2"]);
    for (const [k, create] of creates.entries()) {
      expect(create.input).toEqual({ q: "1+1", data_id: "run-e0-d3" });
      expect(create.is_train).toBe(true);
      expect(create.metadata).toMatchObject({ batch_idx: 5, sample_idx_in_batch: k, group_id: "run-e0-d3" });
      expect(create.config).toEqual({
        timeout_seconds: 30,
        max_attempts: 1,
        local: { command: ["node", "agent.mjs"], env_map: { Q: "input.q" } },
      });
    }
  });

  it("keeps an input's own data_id and leaves config.local to the controller when none is configured", () => {
    const [create] = groupCreates(planGroup("g", { ...fields, input: { data_id: "mine" } }, 1), parseTrainerConfig({}));
    expect(create?.input).toEqual({ data_id: "mine" });
    expect(create?.config).not.toHaveProperty("local");
  });

  it("the tracker sees a group that finished before it was asked about (the cursor had already passed it)", async () => {
    const store = new MemoryStore();
    gateway = await startTestGateway({}, store);
    const client = new GatewayClient({ baseUrl: gateway.url, key: "test-key" });
    const early = planGroup("early", fields, 2);
    const late = planGroup("late", fields, 1);
    for (const id of [...early.rolloutIds, ...late.rolloutIds]) {
      await store.createRollouts([RolloutCreateSchema.parse({ rollout_id: id, input: 0 })]);
    }
    await store.patchRollout("early-0", { status: { state: "failed" } });
    await store.patchRollout("early-1", { status: { state: "failed" } });
    const tracker = new GroupTracker(client);
    await tracker.poll(); // passes early-0 and early-1 before the trainer asks about their group
    expect(tracker.isComplete(late)).toBe(false);
    expect(tracker.isComplete(early)).toBe(true);
    expect(tracker.state("early-1")).toBe("failed");
    await store.patchRollout("late-0", { status: { state: "failed" } });
    await tracker.poll();
    expect(tracker.isComplete(late)).toBe(true);
    tracker.forget(early);
    expect(tracker.state("early-0")).toBeNull();
    await client.close();
  });
});
