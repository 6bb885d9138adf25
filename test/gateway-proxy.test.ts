/**
 * Scenario: the full gateway app (API routes + LLM proxy, SQLite store) as agents and the trainer use it — an agent on
 * the real `openai` SDK calls the proxy, the call lands as a model_request event whose triplet view carries the exact
 * upstream token ids, and the trainer's pause/resume reaches the proxy through the gateway client.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayClient } from "../src/gateway/client.js";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import { startTestGateway, type TestGateway } from "../src/gateway/testing/serve.js";
import type { TripletModelRequest } from "../src/protocol/index.js";
import { SqliteStore } from "../src/store/sqlite.js";
import { postHalfClosed } from "../src/testing/half-closed.js";

describe("gateway app with the LLM proxy mounted", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function start(): Promise<{ gateway: TestGateway; fake: FakeVllm; client: GatewayClient }> {
    const dir = mkdtempSync(join(tmpdir(), "arclight-gw-proxy-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const store = SqliteStore.open(join(dir, "gateway.db"));
    const gateway = await startTestGateway({ model_name: "policy" }, store);
    cleanups.push(() => gateway.close());
    const fake = await FakeVllm.start();
    cleanups.push(() => fake.close());
    const client = new GatewayClient({ baseUrl: gateway.url, key: "test-key" });
    cleanups.push(() => client.close());
    await client.upsertModels([{ model: "policy", endpoint: fake.url, version: 3 }]);
    return { gateway, fake, client };
  }

  it("records an openai-SDK call through the proxy with the upstream's exact token ids in the triplet view", async () => {
    const { gateway, fake, client } = await start();
    const [rollout] = await client.createRollouts([{ rollout_id: "r-sdk", input: { question: "hi" } }]);
    const openai = new OpenAI({
      baseURL: `${gateway.url}/proxy/rollout/${rollout!.rollout_id}/attempt/0/mode/train/openai/v1`,
      apiKey: "test-key",
      maxRetries: 0,
    });
    const completion = await openai.chat.completions.create({
      model: "anything",
      messages: [{ role: "user", content: "Say hello 👋 — “quoted” 你好" }],
    });
    expect(completion.choices[0]?.message.role).toBe("assistant");

    const upstreamBody = fake.received[0]!.body;
    expect(upstreamBody.model).toBe("policy");
    expect(upstreamBody.return_token_ids).toBe(true);
    expect(upstreamBody.logprobs).toBe(true);

    const raw = completion as unknown as { prompt_token_ids: number[]; choices: { token_ids: number[] }[] };
    const events = await client.getEvents("r-sdk", { format: "triplet" });
    const calls = events.filter((e) => e.event_type === "model_request");
    expect(calls).toHaveLength(1);
    const triplet = calls[0]!.data as unknown as TripletModelRequest;
    expect(triplet.prompt_token_ids).toEqual(raw.prompt_token_ids);
    expect(triplet.response_token_ids).toEqual(raw.choices[0]!.token_ids);
    expect(triplet.response_log_probs).toHaveLength(triplet.response_token_ids.length);
    expect(triplet.server).toMatchObject({ model: "policy", version: 3 });
  });

  it("pauses and resumes the proxy through the gateway client", async () => {
    const { gateway, client } = await start();
    await client.createRollouts([{ rollout_id: "r-pause", input: {} }]);
    const paused = await client.pauseProxy({ retry_after_seconds: 7, reason: "weight update" });
    expect(paused).toMatchObject({ paused: true, retry_after_seconds: 7, inflight: 0 });
    const url = `${gateway.url}/proxy/rollout/r-pause/attempt/0/mode/train/openai/v1/chat/completions`;
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }] });
    const headers = { authorization: "Bearer test-key", "content-type": "application/json" };
    const refused = await fetch(url, { method: "POST", headers, body });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("7");
    expect(refused.headers.get("x-agl-paused")).toBe("true");
    expect(await client.resumeProxy()).toMatchObject({ paused: false });
    const accepted = await fetch(url, { method: "POST", headers, body });
    expect(accepted.status).toBe(200);
  });

  it("answers 401 on the proxy without the key and 404 for an unknown rollout", async () => {
    const { gateway } = await start();
    const base = `${gateway.url}/proxy/rollout/nope/attempt/0/mode/train/openai/v1/chat/completions`;
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }] });
    const noKey = await fetch(base, { method: "POST", headers: { "content-type": "application/json" }, body });
    expect(noKey.status).toBe(401);
    const unknown = await fetch(base, {
      method: "POST",
      headers: { authorization: "Bearer test-key", "content-type": "application/json" },
      body,
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ detail: expect.stringContaining("nope") });
  });
  it("answers a model call whose client half-closes after sending it (nc -N), as the API routes do", async () => {
    const { gateway, client } = await start();
    await client.createRollouts([{ rollout_id: "r-half", input: {} }]);
    const body = JSON.stringify({ model: "policy", messages: [{ role: "user", content: "hi" }] });
    // The whole request, then the client's side of the connection ended: the answer must still come back.
    const path = "/proxy/rollout/r-half/attempt/0/mode/train/openai/v1/chat/completions";
    const answer = await postHalfClosed(gateway.url, path, body, ["authorization: Bearer test-key"]);
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    const json = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as { choices: unknown[] };
    expect(json.choices).toHaveLength(1);
    const events = await client.getEvents("r-half");
    const calls = events.filter((e) => e.event_type === "model_request");
    expect(calls.map((e) => (e.data as { status?: string }).status)).toEqual(["ok"]);
  });
});
