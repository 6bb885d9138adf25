/**
 * What `arclight train`, `eval` and `apo` print for a failed rollout: the agent's last output when the controller
 * captured it, else the rollout's reason, with the "may not have started" hint only where that is what the reason says.
 * Real gateway on loopback, real client.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../gateway/client.js";
import { startTestGateway, type TestGateway } from "../gateway/testing/serve.js";
import { describeFailedRollout, describeFirstFailed } from "./failure-report.js";

let gateway: TestGateway;
let client: GatewayClient;
beforeAll(async () => {
  gateway = await startTestGateway({ key: "k" });
  client = new GatewayClient({ baseUrl: gateway.url, key: "k" });
});
afterAll(async () => {
  await client.close();
  await gateway.close();
});

/** A rollout run and failed with `reason`, with the agent's output as its log event when `output` is given. */
async function failed(id: string, reason: string | null, output?: string): Promise<void> {
  await client.createRollouts([{ rollout_id: id, input: {} }]);
  await client.patchRollout(id, { status: { state: "running", last_attempt_id: "0" } });
  if (output !== undefined) {
    const data = { source: "controller", reason, exit_code: 1, signal: null, text: output, dropped_bytes: 0 };
    await client.postEvent(id, "0", { event_type: "log", data });
  }
  await client.patchRollout(id, { status: { state: "failed", last_attempt_id: "0", error_message: reason } });
}

describe("describeFailedRollout", () => {
  it("shows the reason and the last lines of the agent's output", async () => {
    await failed("with-log", "exited with code 1", "loading\nError: Cannot find module mytools\n");
    expect(await describeFailedRollout(client, "with-log")).toBe(
      "rollout with-log failed (exited with code 1); its last output:\n  loading\n  Error: Cannot find module mytools",
    );
  });

  // A run that failed while no controller watched it (exit code 13 after a kill -9 of arclight train) did run and call
  // the model: "the agent command may not have started" would mislead.
  it("without captured output, gives the rollout's reason instead of guessing the agent never started", async () => {
    await failed("adopted", "exited with code 13");
    expect(await describeFailedRollout(client, "adopted")).toBe(
      "rollout adopted failed (exited with code 13); no output of it was recorded",
    );
  });

  it("keeps the hint for an agent that did not start", async () => {
    await failed("enoent", "failed to start: spawn nope ENOENT");
    expect(await describeFailedRollout(client, "enoent")).toMatch(
      /^rollout enoent failed \(failed to start: spawn nope ENOENT\) with no output recorded: the agent command may not have started/,
    );
    await failed("no-reason", null);
    expect(await describeFailedRollout(client, "no-reason")).toMatch(
      /^rollout no-reason failed with no output recorded/,
    );
  });

  it("describeFirstFailed skips rollouts that did not fail", async () => {
    await client.createRollouts([{ rollout_id: "queued", input: {} }]);
    expect(await describeFirstFailed(client, ["queued", "adopted"])).toBe(
      "rollout adopted failed (exited with code 13); no output of it was recorded",
    );
    expect(await describeFirstFailed(client, ["queued"])).toBeNull();
  });
});
