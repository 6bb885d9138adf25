import { describe, expect, it } from "vitest";
import { GatewayClient } from "../gateway/client.js";
import { startTestGateway } from "../gateway/testing/serve.js";
import { RolloutCreateSchema, RolloutFinished } from "../protocol/index.js";
import { describeExit, isSuperseded, reportOutcome } from "./outcome.js";

describe("describeExit", () => {
  it("names every way an agent process ends", () => {
    expect(describeExit({ code: 0, signal: null }, null, 60)).toEqual({ state: "succeeded", reason: null });
    expect(describeExit({ code: 2, signal: null }, null, 60).reason).toBe("exited with code 2");
    expect(describeExit({ code: null, signal: "SIGSEGV" }, null, 60).reason).toBe("killed by SIGSEGV");
    expect(describeExit({ code: null, signal: null, spawnError: new Error("spawn x ENOENT") }, null, 60).reason).toBe(
      "failed to start: spawn x ENOENT",
    );
  });

  it("lets the controller's own kill cause win over the exit status", () => {
    expect(describeExit({ code: null, signal: "SIGTERM" }, "timeout", 1.5).reason).toBe("timed out after 1.5 s");
    expect(describeExit({ code: 0, signal: null }, "shutdown", 60).reason).toBe("controller shutdown");
    expect(describeExit({ code: null, signal: null }, "lost", 60).reason).toBe("controller lost the process");
  });
});

describe("reportOutcome", () => {
  it("posts the failure log before the rollout turns terminal, and a repeated report is dropped as superseded", async () => {
    const gateway = await startTestGateway();
    const client = new GatewayClient({ baseUrl: gateway.url, key: "test-key", retryBackoffBaseMs: 5 });
    try {
      await gateway.store.createRollouts([RolloutCreateSchema.parse({ rollout_id: "r1", input: 0 })]);
      await gateway.store.patchRollout("r1", { status: { state: "running" } });
      const outcome = {
        rolloutId: "r1",
        attemptId: "0",
        state: "failed" as const,
        reason: "exited with code 3",
        log: { text: "Traceback ..." },
      };
      expect(await reportOutcome(client, outcome)).toBe("reported");
      // E.g. the first patch's answer was lost: the rollout is terminal now, so every write is refused.
      expect(await reportOutcome(client, outcome)).toBe("superseded");
      expect((await gateway.store.getRollout("r1"))!.status).toMatchObject({
        state: "failed",
        error_message: "exited with code 3",
      });
      const logs = await gateway.store.listEvents("r1", { eventType: "log" });
      expect(logs.map((e) => e.data)).toEqual([{ text: "Traceback ..." }]);
    } finally {
      await client.close();
      await gateway.close();
    }
  });

  it("treats a write refused because the rollout finished as superseded, not as an error to retry", () => {
    expect(isSuperseded(new RolloutFinished("r1", "succeeded"))).toBe(true);
    expect(isSuperseded(new Error("socket hang up"))).toBe(false);
  });
});
