import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../gateway/app.js";
import { gatewayConfig } from "../gateway/config.js";
import { startTestGateway } from "../gateway/testing/serve.js";
import { MemoryStore } from "../store/memory.js";
import { EmitFailed, emitEvent, emitReward } from "./emit.js";
import type { AgentEnv } from "./env.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function envFor(url: string, rolloutId: string, attemptId = "0", apiKey = "test-key"): AgentEnv {
  return {
    baseURL: `${url}/proxy/rollout/${rolloutId}/attempt/${attemptId}/mode/train/openai/v1`,
    apiKey,
    rolloutId,
    attemptId,
    eventUrl: `${url}/api/rollouts/${rolloutId}/attempt/${attemptId}/events`,
  };
}

describe("emitReward / emitEvent against the real gateway", () => {
  it("stores a reward with source and reason, and custom events, each with an event_id", async () => {
    const gateway = await startTestGateway({ key: "test-key" });
    cleanups.push(() => gateway.close());
    await gateway.store.createRollouts([
      {
        rollout_id: "r",
        input: {},
        is_train: true,
        config: { timeout_seconds: 60, max_attempts: 1, local: null, k8s: null },
        metadata: { batch_idx: null, sample_idx_in_batch: null },
      },
    ]);
    const env = envFor(gateway.url, "r");
    const reward = await emitReward(0.5, { env, source: "judge", reason: "half right" });
    expect(reward.data).toEqual({ value: 0.5, source: "judge", reason: "half right" });
    expect(reward.event_id).toMatch(/^[0-9a-f-]{36}$/);
    await emitEvent("tool_call", { name: "search" }, { env });
    const events = await gateway.store.listEvents("r");
    expect(events.map((e) => [e.event_type, e.data])).toEqual([
      ["reward", { value: 0.5, source: "judge", reason: "half right" }],
      ["tool_call", { name: "search" }],
    ]);
  });

  it("rejects a non-finite reward before posting", () => {
    expect(() => emitReward(Number.NaN, { env: envFor("http://127.0.0.1:9", "r") })).toThrow(RangeError);
  });

  it("fails at once, without retrying, when the gateway refuses (superseded attempt → 409)", async () => {
    const gateway = await startTestGateway({ key: "test-key" });
    cleanups.push(() => gateway.close());
    await gateway.store.createRollouts([
      {
        rollout_id: "r",
        input: {},
        is_train: true,
        config: { timeout_seconds: 60, max_attempts: 1, local: null, k8s: null },
        metadata: { batch_idx: null, sample_idx_in_batch: null },
      },
    ]);
    await gateway.store.patchRollout("r", { status: { last_attempt_id: "1" } }); // attempt "0" is superseded
    const err = await emitReward(1, { env: envFor(gateway.url, "r", "0") }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmitFailed);
    expect((err as EmitFailed).status).toBe(409);
    expect((err as EmitFailed).message).toContain("attempt 0 was superseded (current: 1)");
  });

  it("retries while the gateway is unreachable and stores the event once it is up", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve));
    const url = `http://127.0.0.1:${port}`;
    const pending = emitReward(1, { env: envFor(url, "r", "0", ""), retries: 30 });

    const store = new MemoryStore();
    await store.createRollouts([
      {
        rollout_id: "r",
        input: {},
        is_train: true,
        config: { timeout_seconds: 60, max_attempts: 1, local: null, k8s: null },
        metadata: { batch_idx: null, sample_idx_in_batch: null },
      },
    ]);
    const app = buildApp({ store, config: gatewayConfig({ key: "" }) });
    await app.listen({ host: "127.0.0.1", port });
    cleanups.push(() => app.close());
    const stored = await pending;
    expect(stored.data).toEqual({ value: 1 });
    expect(await store.listEvents("r")).toHaveLength(1);
  });
});
