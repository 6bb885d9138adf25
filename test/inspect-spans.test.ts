/** `arclight inspect` (a child process) on a rollout with spans: the span tree, and rows of one agent's calls. */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import { startTestGateway, type TestGateway } from "../src/gateway/testing/serve.js";

const exec = promisify(execFile);
const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const TRACE = "0af7651916cd43dd8448eb211c80319c";

let gw: TestGateway;
let fake: FakeVllm;
beforeEach(async () => {
  fake = await FakeVllm.start({ content: "42" });
  gw = await startTestGateway();
  await gw.call("POST", "/api/models", [{ model: "policy", endpoint: fake.url }]);
  await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
  const span = (
    id: string,
    parent: string | undefined,
    name: string,
    startMs: number,
    attributes: Record<string, string>,
  ) => ({
    traceId: TRACE,
    spanId: id,
    parentSpanId: parent,
    name,
    startTimeUnixNano: `${1_700_000_000_000 + startMs}000000`,
    endTimeUnixNano: `${1_700_000_000_000 + startMs + 5}000000`,
    attributes: Object.entries(attributes).map(([key, value]) => ({ key, value: { stringValue: value } })),
  });
  const traces = {
    resourceSpans: [
      {
        resource: { attributes: [{ key: "arclight.rollout_id", value: { stringValue: "r" } }] },
        scopeSpans: [
          {
            spans: [
              span("00000000000000b2", "00000000000000a1", "llm.chat", 2, {}),
              span("00000000000000b1", "00000000000000a1", "tool.search", 1, { query: "x" }),
              span("00000000000000a1", undefined, "agent.run", 0, { "gen_ai.agent.name": "planner" }),
            ],
          },
        ],
      },
    ],
  };
  expect((await gw.call("POST", "/v1/traces", traces)).status).toBe(200);
  const chat = await gw.call(
    "POST",
    "/proxy/rollout/r/attempt/0/mode/train/openai/v1/chat/completions",
    { model: "policy", messages: [{ role: "user", content: "hi" }] },
    { traceparent: `00-${TRACE}-00000000000000b2-01` },
  );
  expect(chat.status).toBe(200);
  await gw.call("POST", "/api/rollouts/r/attempt/0/events", {
    event_type: "reward",
    data: { value: 0.5, span_id: "00000000000000a1" },
  });
});
afterEach(async () => {
  await gw.close();
  await fake.close();
});

function inspect(...args: string[]): Promise<{ stdout: string }> {
  const flags = ["--gateway-url", gw.url, "--key", "test-key"];
  return exec(process.execPath, ["--import", import.meta.resolve("tsx"), MAIN, "inspect", "r", ...flags, ...args], {
    timeout: 60_000,
  });
}

describe("arclight inspect", () => {
  it("--level spans prints the span tree with the model call inside its span and the reward in the root", async () => {
    const { stdout } = await inspect("--level", "spans");
    const lines = stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("rollout r attempt 0 (queuing): 5 events");
    expect(lines[1]).toMatch(/^agent\.run \(5\.0 ms\) \{"gen_ai\.agent\.name":"planner"\}$/);
    expect(lines[2]).toMatch(/^├─ tool\.search \(5\.0 ms\) \{"query":"x"\}$/);
    expect(lines[3]).toMatch(/^├─ llm\.chat \(5\.0 ms\)$/);
    expect(lines[4]).toMatch(
      /^│ {2}└─ model_request #4 agent=planner policy v0 ok [\d.]+ ms prompt \d+ tok → \d+ tok$/,
    );
    expect(lines[5]).toBe("└─ reward 0.5 #5");
    expect(lines).toHaveLength(6);
  });

  it("--agent keeps only the named agents' calls in the rows", async () => {
    const planner = JSON.parse((await inspect("--agent", "planner")).stdout) as { counts: { calls: number } };
    expect(planner.counts.calls).toBe(1);
    const other = JSON.parse((await inspect("--agent", "coder")).stdout) as { counts: { calls: number } };
    expect(other.counts.calls).toBe(0);
  });
});
