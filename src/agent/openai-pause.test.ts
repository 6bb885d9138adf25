import { afterEach, describe, expect, it } from "vitest";
import { FakeVllm } from "../gateway/testing/fake-vllm.js";
import { startProxyHarness } from "../gateway/testing/proxy-harness.js";
import { openaiClient } from "./openai.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("openaiClient against a paused gateway proxy", () => {
  it("waits out 429 + Retry-After for as long as the pause lasts (SDK retries off) and succeeds after resume", async () => {
    const fake = await FakeVllm.start({ content: "after the pause" });
    const h = await startProxyHarness({ models: [{ model: "policy", endpoint: fake.url }] });
    cleanups.push(
      () => fake.close(),
      () => h.close(),
    );
    const rid = await h.newRollout();
    const statuses: number[] = [];
    const countingFetch = async (input: string | URL | Request, init?: RequestInit) => {
      const response = await fetch(input, init);
      statuses.push(response.status);
      if (statuses.length === 2) h.pause.resume(); // resume once the agent has been turned away twice
      return response;
    };
    const env = { baseURL: h.openaiBase(rid), apiKey: h.key, rolloutId: rid, attemptId: "0", eventUrl: "unused" };
    // maxRetries 0: the SDK's own retries are not what carries the call through the pause.
    const client = openaiClient({ env, maxRetries: 0, fetch: countingFetch });
    h.pause.pause(1, "weight update");

    const completion = await client.chat.completions.create({
      model: "policy",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(completion.choices[0]!.message.content).toBe("after the pause");
    expect(statuses).toEqual([429, 429, 200]);
  });
});
