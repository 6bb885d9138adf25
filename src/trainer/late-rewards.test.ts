import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../gateway/client.js";
import { startTestGateway, type TestGateway } from "../gateway/testing/serve.js";
import { parseTrainerConfig } from "./config.js";
import { readFinishedGroup } from "./gateway-io.js";
import { LateRewardWatch } from "./late-rewards.js";
import { GroupTracker, groupCreates, planGroup } from "./rollout-groups.js";

let gateway: TestGateway | undefined;
let client: GatewayClient | undefined;
afterEach(async () => {
  await client?.close();
  await gateway?.close();
  gateway = undefined;
  client = undefined;
});

const fields = { dataIndex: 0, input: { q: "1+1" }, isTrain: true, batchIdx: 0, launchVersion: 0 };
const config = parseTrainerConfig({});

/** A real gateway with one group of two succeeded rollouts, each with one model call; a tracker that saw them end. */
async function finishedGroup() {
  gateway = await startTestGateway();
  client = new GatewayClient({ baseUrl: gateway.url, key: "test-key" });
  const plan = planGroup("g", fields, 2);
  await client.createRollouts(groupCreates(plan, config));
  const call = { response: { prompt_token_ids: [1], choices: [{ token_ids: [2] }] }, status: "ok" };
  for (const id of plan.rolloutIds) {
    await client.patchRollout(id, { status: { state: "running" } });
    await client.postEvent(id, "0", { event_type: "model_request", data: call });
    await client.patchRollout(id, { status: { state: "succeeded" } });
  }
  const tracker = new GroupTracker(client);
  await tracker.poll();
  return { plan, tracker, client };
}

const reward = (value: number) => ({ event_type: "reward", data: { value } });

describe("rewards that arrive after the rollout finished", () => {
  it("counts a late reward stored before the trainer read the rollout, like any reward", async () => {
    const { plan, tracker, client } = await finishedGroup();
    const late = await client.postEvent("g-0", "0", reward(0.9)); // an AGL on_succeeded hook, after the finish
    expect(late.late).toBe(true);
    const group = await readFinishedGroup(client, tracker, plan, config);
    const rewards = group.records[0]!.events.filter((e) => e.event_type === "reward");
    expect(rewards.map((e) => (e.data as { value: unknown }).value)).toEqual([0.9]);
    expect(group.marks).toEqual([
      { rolloutId: "g-0", readUpTo: 2 },
      { rolloutId: "g-1", readUpTo: 1 },
    ]);
    const watch = new LateRewardWatch();
    watch.watch(group.marks);
    expect(await watch.check(client)).toEqual({ count: 0, rolloutIds: [] });
  });

  it("reports rewards stored after the read once, naming their rollout", async () => {
    const { plan, tracker, client } = await finishedGroup();
    const group = await readFinishedGroup(client, tracker, plan, config);
    const watch = new LateRewardWatch();
    watch.watch(group.marks);
    await client.postEvent("g-1", "0", reward(1));
    await client.postEvent("g-1", "0", reward(0.5));
    expect(await watch.check(client)).toEqual({ count: 2, rolloutIds: ["g-1"] });
    // Checked once: the watch forgot the rollouts it checked.
    expect(await watch.check(client)).toEqual({ count: 0, rolloutIds: [] });
  });
});
