/**
 * End-to-end tiny training through real components: gateway (proxy mounted), tiny embedded engine behind the engine
 * server, local controller running node agents that call the proxy with the openai SDK and post a reward.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseTrainerConfig, type TrainerConfigInput } from "../src/trainer/config.js";
import { runTraining } from "../src/trainer/loop.js";
import { startTrainerStack, TEST_AGENT, type TrainerStack } from "../src/trainer/testing/stack.js";

let stack: TrainerStack | undefined;
afterEach(async () => {
  await stack?.close();
  stack = undefined;
});

function tinyConfig(overrides: TrainerConfigInput = {}) {
  return parseTrainerConfig({
    name: "tiny",
    train_batch_size: 2,
    n: 2,
    total_steps: 2,
    rollout_timeout_seconds: 60,
    controller: { command: ["node", TEST_AGENT], env_map: { AGL_INPUT: "input" } },
    aggregator: { level: "trajectory", max_prompt_length: 128, max_response_length: 96 },
    optimizer: { learning_rate: 1e-3 },
    checkpoint_interval: 0,
    val_interval: 1,
    pause_retry_after_seconds: 0,
    ...overrides,
  });
}

const items = (n: number, extra: object = {}) =>
  Array.from({ length: n }, (_, i) => ({ index: i, input: { prompt: `say a ${i}`, turns: 2, ...extra } }));

describe("trainer end to end", () => {
  it("trains 2 steps: rows built from proxied calls, rewards recorded, policy version advanced, metrics written", async () => {
    stack = await startTrainerStack();
    const runDir = join(stack.dir, "runs", "tiny");
    const summary = await runTraining({
      config: tinyConfig(),
      client: stack.client,
      engine: stack.engine,
      serving: stack.serving,
      trainData: items(4),
      valData: items(2, { turns: 1 }),
      runDir,
      pollIntervalMs: 20,
    });
    expect(summary.steps).toBe(2);
    expect(summary.policyVersion).toBe(2);
    expect(stack.engine.policyVersion).toBe(2);
    const lines = readFileSync(join(runDir, "metrics.jsonl"), "utf8").trim().split("\n");
    const metrics = lines.map((line) => JSON.parse(line) as Record<string, number | null>);
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    for (const m of metrics) {
      expect(m.rollouts).toBe(4);
      expect(m.rows).toBeGreaterThanOrEqual(4);
      expect(m.tokens).toBeGreaterThan(0);
      expect(m.reward_filled).toBe(0);
      expect(m["val/reward_mean"]).not.toBeNull();
      expect(m.entropy).toBeGreaterThan(0);
    }
    // The gateway records the version that served each call: step 2's rollouts ran on version 1.
    const events = await stack.client.getEvents("tiny-e0-d0-0", { format: "triplet" });
    expect(events.some((e) => e.event_type === "reward")).toBe(true);
    const models = await stack.client.getEvents(summary.metrics.length > 0 ? "tiny-v2-d0-0" : "", {
      format: "triplet",
    });
    const served = models
      .filter((e) => e.event_type === "model_request")
      .map((e) => (e.data as { server: { version: number } }).server.version);
    expect(served).toEqual([2]);
    expect(existsSync(join(runDir, "checkpoints", "latest.json"))).toBe(true);
  });
});
