/**
 * `runRolloutsOnce` on a real stack (gateway, engine server, controller running the test agent): one rollout per
 * input with pre-assigned ids, rewards read back in input order, a crashed agent named and filled.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTrainerStack, TEST_AGENT, type TrainerStack } from "../../test/support/stack.js";
import { parseTrainerConfig } from "./config.js";
import { rolloutOnceId, runRolloutsOnce, summariseRewards } from "./rollouts-once.js";

let stack: TrainerStack;
beforeAll(async () => {
  stack = await startTrainerStack({ poolSize: 4 });
  await stack.client.upsertModels(stack.serving.endpoints.map((endpoint) => ({ model: "policy", endpoint })));
}, 60_000);
afterAll(() => stack?.close());

const config = parseTrainerConfig({
  name: "once",
  rollout_timeout_seconds: 60,
  reward_fillna_value: -1,
  controller: { command: ["node", TEST_AGENT], env_map: { AGL_INPUT: "input" } },
});

describe("runRolloutsOnce", () => {
  it("runs one rollout per input, ids PREFIX-dINDEX-0, rewards in input order, a crash filled and named", async () => {
    const items = [
      { index: 3, input: { prompt: "say a" } },
      { index: 7, input: { crash: true } },
      { index: 9, input: { prompt: "say b" } },
    ];
    const progress: number[] = [];
    const result = await runRolloutsOnce(stack.client, items, {
      prefix: "once",
      isTrain: false,
      config,
      policyVersion: 0,
      pollMs: 50,
      onProgress: (done) => progress.push(done),
    });
    expect(result.records.map((r) => r.rolloutId)).toEqual(["once-d3-0", "once-d7-0", "once-d9-0"]);
    expect(rolloutOnceId("once", 7)).toBe("once-d7-0");
    expect(result.failedIds).toEqual(["once-d7-0"]);
    expect(result.records[1]?.events).toEqual([]);
    expect(result.rewards[1]).toBe(-1);
    for (const i of [0, 2]) {
      expect(result.rewards[i]).toBeGreaterThanOrEqual(0);
      expect(result.records[i]?.events.some((e) => e.event_type === "model_request")).toBe(true);
    }
    expect(progress.at(-1)).toBe(3);
  }, 90_000);

  it("stops waiting once the signal is aborted", async () => {
    const aborter = new AbortController();
    aborter.abort(new Error("stop"));
    const run = runRolloutsOnce(stack.client, [{ index: 0, input: { sleep_ms: 60_000 } }], {
      prefix: "aborted",
      isTrain: false,
      config,
      policyVersion: 0,
      signal: aborter.signal,
    });
    await expect(run).rejects.toThrow("stop");
  });
});

describe("summariseRewards", () => {
  it("gives the mean and the share at or above solvedAt; zeros for no rewards", () => {
    expect(summariseRewards([1, 0, 0.5, 1])).toEqual({ mean: 0.625, solved: 0.5, count: 4 });
    expect(summariseRewards([0.4, 0.6], 0.5)).toEqual({ mean: 0.5, solved: 0.5, count: 2 });
    expect(summariseRewards([])).toEqual({ mean: 0, solved: 0, count: 0 });
  });
});
