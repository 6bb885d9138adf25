/**
 * Agent Lightning v1.0 clients against the real gateway (HTTP on loopback), on both stores: attempt rules, late
 * events, no-op patches and the wire shapes AGL code reads. Each case names the AGL behaviour it reproduces.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import { startTestGateway, type TestGateway } from "../src/gateway/testing/serve.js";
import type { Event, Rollout } from "../src/protocol/index.js";
import { MemoryStore } from "../src/store/memory.js";
import { SqliteStore } from "../src/store/sqlite.js";
import type { Store } from "../src/store/store.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const STORES: [string, () => Store][] = [
  ["memory", () => new MemoryStore()],
  [
    "sqlite",
    () => {
      const dir = mkdtempSync(join(tmpdir(), "arclight-agl-compat-"));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      return SqliteStore.open(join(dir, "gateway.db"));
    },
  ],
];

async function start(makeStore: () => Store): Promise<TestGateway> {
  const gw = await startTestGateway({ model_name: "policy" }, makeStore());
  cleanups.push(() => gw.close());
  return gw;
}

async function json<T>(res: Promise<Response>): Promise<T> {
  return (await (await res).json()) as T;
}

/** The value of an unlabelled Prometheus sample (or one with `labels`), 0 when absent. */
async function metric(gw: TestGateway, name: string, labels = ""): Promise<number> {
  const text = await (await gw.call("GET", "/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

describe.each(STORES)("AGL v1.0 attempt and late-write rules (%s store)", (_name, makeStore) => {
  it("a hook's reward posted after the rollout succeeded is stored late, read back and counted", async () => {
    // AGL trainers flush on_succeeded hook rewards after the rollout is terminal; AGL stores them.
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", last_attempt_id: "0" } });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "succeeded", last_attempt_id: "0" } });
    const reward = await gw.call("POST", "/api/rollouts/r/attempt/0/events", {
      event_type: "reward",
      data: { value: 0.9 },
    });
    expect(reward.status).toBe(200);
    expect(await reward.json()).toMatchObject({ event_type: "reward", late: true, data: { value: 0.9 } });
    const triplets = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events?format=triplet"));
    expect(triplets.map((e) => e.data)).toEqual([{ value: 0.9 }]);
    expect(await metric(gw, "arclight_late_events_total")).toBe(1);
  });

  it("an event to an attempt id never seen is stored and listed, without changing the attempt GET events reads", async () => {
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running" } });
    await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "log", data: { n: 0 } });
    const foreign = await gw.call("POST", "/api/rollouts/r/attempt/judge-1/events", { event_type: "log", data: {} });
    expect(foreign.status).toBe(200);
    const detail = await json<{ rollout: Rollout; attempts: string[] }>(gw.call("GET", "/api/rollouts/r"));
    expect(detail.attempts).toEqual(["0", "judge-1"]);
    expect(detail.rollout.status.last_attempt_id).toBeNull();
    const read = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events"));
    expect(read.map((e) => e.attempt_id)).toEqual(["0"]);
  });

  it("a PATCH moving last_attempt_id makes GET events read the new attempt; the old one is refused 409", async () => {
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", last_attempt_id: "0" } });
    await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "log", data: { n: 0 } });
    const moved = await gw.call("PATCH", "/api/rollouts/r", { status: { last_attempt_id: "second" } });
    expect(moved.status).toBe(200);
    await gw.call("POST", "/api/rollouts/r/attempt/second/events", { event_type: "log", data: { n: 1 } });
    const read = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events"));
    expect(read.map((e) => e.data.n)).toEqual([1]);
    const stale = await gw.call("POST", "/api/rollouts/r/attempt/0/events", {
      event_type: "reward",
      data: { value: 1 },
    });
    expect(stale.status).toBe(409);
    expect(await stale.json()).toMatchObject({ code: "stale_attempt", attempt_id: "0", current_attempt_id: "second" });
    const route = '{route="/api/rollouts/:id/attempt/:aid/events"}';
    expect(await metric(gw, "arclight_stale_attempt_writes_total", route)).toBe(1);
  });

  it("a superseded attempt's late report can neither finish the rollout nor write to it", async () => {
    // Attempt 0 failed and was retried as attempt 1; attempt 0's helper then reports success and a reward.
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {}, config: { max_attempts: 2 } }]);
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", last_attempt_id: "0" } });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "failed", last_attempt_id: "0" } });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", last_attempt_id: "1" } });
    const finish = await gw.call("PATCH", "/api/rollouts/r", { status: { state: "succeeded", last_attempt_id: "0" } });
    expect(finish.status).toBe(409);
    expect(await finish.json()).toMatchObject({ code: "stale_attempt", current_attempt_id: "1" });
    const reward = await gw.call("POST", "/api/rollouts/r/attempt/0/events", {
      event_type: "reward",
      data: { value: 1 },
    });
    expect(reward.status).toBe(409);
    const rollout = await json<{ rollout: Rollout }>(gw.call("GET", "/api/rollouts/r"));
    expect(rollout.rollout.status).toMatchObject({ state: "running", last_attempt_id: "1" });
    expect(await metric(gw, "arclight_stale_attempt_writes_total", '{route="/api/rollouts/:id"}')).toBe(1);
  });

  it("a PATCH to the state the rollout already has changes nothing: 200, same version", async () => {
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    const first = await json<Rollout>(gw.call("PATCH", "/api/rollouts/r", { status: { state: "running" } }));
    const again = await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running" } });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(first);
    expect(first.status.version).toBe(2);
  });

  it("a queuing rollout (agent started before the patch to running) takes model calls and rewards in attempt 0", async () => {
    // AGL's local controller spawns the agent, then patches running; its k8s controller patches running only when
    // it sees the Job run. So the first writes of a normal attempt reach a rollout that is still queuing.
    const fake = await FakeVllm.start();
    cleanups.push(() => fake.close());
    const gw = await start(makeStore);
    await gw.call("POST", "/api/models", [{ model: "policy", endpoint: fake.url }]);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {}, config: { max_attempts: 2 } }]);
    const base = `/proxy/rollout/r/attempt/0/mode/train/openai/v1/chat/completions`;
    const call = await gw.call("POST", base, { model: "x", messages: [{ role: "user", content: "hi" }] });
    expect(call.status).toBe(200);
    const reward = await gw.call("POST", "/api/rollouts/r/attempt/0/events", {
      event_type: "reward",
      data: { value: 1 },
    });
    expect(reward.status).toBe(200);
    const events = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events"));
    expect(events.map((e) => [e.event_type, e.attempt_id])).toEqual([
      ["model_request", "0"],
      ["reward", "0"],
    ]);
    // Once attempt 0 has been retried, the queuing rollout's writes go to attempt 1; attempt 0 is refused.
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", last_attempt_id: "0" } });
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "failed" } });
    const stale = await gw.call("POST", base, { model: "x", messages: [{ role: "user", content: "hi" }] });
    expect(stale.status).toBe(409);
    expect(await stale.json()).toMatchObject({ code: "stale_attempt", current_attempt_id: "1" });
    expect(fake.received).toHaveLength(1);
  });
});

describe.each(STORES)("AGL v1.0 wire shapes (%s store)", (_name, makeStore) => {
  async function withUpstream() {
    const fake = await FakeVllm.start();
    cleanups.push(() => fake.close());
    const gw = await start(makeStore);
    await gw.call("POST", "/api/models", [{ model: "policy", endpoint: fake.url, version: 4 }]);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    await gw.call("PATCH", "/api/rollouts/r", { status: { state: "running", last_attempt_id: "0" } });
    const proxy = (path: string, body: unknown, mode = "train") =>
      gw.call("POST", `/proxy/rollout/r/attempt/0/mode/${mode}/openai/v1/${path}`, body);
    const triplets = () => json<Event[]>(gw.call("GET", "/api/rollouts/r/events?format=triplet"));
    return { fake, gw, proxy, triplets };
  }

  it("a new rollout reads config.local / config.k8s / status.last_attempt_id as null", async () => {
    const gw = await start(makeStore);
    const [created] = await json<Rollout[]>(gw.call("POST", "/api/rollouts", [{ input: {} }]));
    expect(created!.config).toMatchObject({ timeout_seconds: 3600, local: null, k8s: null });
    expect(created!.status.last_attempt_id).toBeNull();
    const read = await json<{ rollout: Rollout }>(gw.call("GET", `/api/rollouts/${created!.rollout_id}`));
    expect(read.rollout).toEqual(created);
  });

  it("rollout metadata answers batch_idx and sample_idx_in_batch, null when unset, and keeps extra keys", async () => {
    // AGL's RolloutMetadata declares both keys with default None, so a raw-JSON client always finds them.
    const gw = await start(makeStore);
    const created = await gw.call("POST", "/api/rollouts", [
      { rollout_id: "bare", input: {} },
      { rollout_id: "set", input: {}, metadata: { batch_idx: 2, sample_idx_in_batch: 5, tag: "x" } },
    ]);
    const text = await created.text();
    expect(text).toContain('"metadata":{"batch_idx":null,"sample_idx_in_batch":null}');
    const read = await json<Rollout[]>(gw.call("GET", "/api/rollouts"));
    expect(read.map((r) => r.metadata)).toEqual([
      { batch_idx: null, sample_idx_in_batch: null },
      { batch_idx: 2, sample_idx_in_batch: 5, tag: "x" },
    ]);
    const one = await json<{ rollout: Rollout }>(gw.call("GET", "/api/rollouts/bare"));
    expect(one.rollout.metadata).toEqual({ batch_idx: null, sample_idx_in_batch: null });
  });

  it("format=triplet keeps the last model_request per identical prompt (AGL's duplicate-prompt case)", async () => {
    // AGL v1.0: test_triplet_events_keep_last_model_request_for_duplicate_prompt, posted by hand as AGL's test does.
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    const post = (prompt: number[], response: number[]) =>
      gw.call("POST", "/api/rollouts/r/attempt/0/events", {
        event_type: "model_request",
        data: {
          response: { prompt_token_ids: prompt, choices: [{ token_ids: response }] },
          server: { model: "policy", version: 3 },
        },
      });
    await post([1, 2], [10]);
    await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "reward", data: { value: 0.5 } });
    await post([3, 4], [20]);
    await post([1, 2], [30]);
    const raw = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events?event_type=model_request"));
    const rawIds = raw.map((e) => (e.data.response as { choices: { token_ids: number[] }[] }).choices[0]!.token_ids);
    expect(rawIds).toEqual([[10], [20], [30]]);
    const triplets = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events?format=triplet"));
    expect(triplets.map((e) => e.event_type)).toEqual(["reward", "model_request", "model_request"]);
    expect(triplets[0]!.data).toEqual({ value: 0.5 });
    expect(triplets.slice(1).map((e) => e.data.prompt_token_ids)).toEqual([
      [3, 4],
      [1, 2],
    ]);
    expect(triplets.slice(1).map((e) => e.data.response_token_ids)).toEqual([[20], [30]]);
    // arclight's finer rule, asked for explicitly: both samples of prompt [1, 2] stay.
    const finer = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events?format=triplet&dedupe=retries"));
    const finerCalls = finer.filter((e) => e.event_type === "model_request");
    expect(finerCalls.map((e) => e.data.response_token_ids)).toEqual([[10], [20], [30]]);
  });

  it("a chat call's triplet: prompt and response ids, logprobs, server model and version, status", async () => {
    const { proxy, triplets } = await withUpstream();
    expect((await proxy("chat/completions", { model: "x", messages: [{ role: "user", content: "hi" }] })).status).toBe(
      200,
    );
    const [call] = await triplets();
    const data = call!.data as Record<string, unknown>;
    // AGL v1.0's keys, then arclight's extra keys for credit assignment (docs/credit.md §1), which AGL clients ignore.
    expect(Object.keys(data)).toEqual([
      "prompt_token_ids",
      "response_token_ids",
      "response_log_probs",
      "server",
      "http_status",
      "status",
      "response_id",
      "finish_reason",
      "response_text",
    ]);
    expect(data.server).toEqual({ model: "policy", version: 4 });
    expect((data.response_log_probs as number[]).length).toBe((data.response_token_ids as number[]).length);
    expect((data.prompt_token_ids as number[]).length).toBeGreaterThan(0);
  });

  it("a completions call's triplet takes the prompt ids from the choice", async () => {
    const { proxy, triplets } = await withUpstream();
    expect((await proxy("completions", { model: "x", prompt: "2+2=" })).status).toBe(200);
    const [call] = await triplets();
    expect(call!.data).toMatchObject({ server: { model: "policy", version: 4 }, status: "ok", http_status: 200 });
    expect(((call!.data as { prompt_token_ids: number[] }).prompt_token_ids ?? []).length).toBeGreaterThan(0);
  });

  it("an upstream error's triplet error is the error object of the upstream body", async () => {
    const { fake, proxy, triplets } = await withUpstream();
    fake.behave({ contextOverflow: true });
    const answer = await proxy("chat/completions", { model: "x", messages: [{ role: "user", content: "hi" }] });
    expect(answer.status).toBe(400);
    const upstreamBody = (await answer.json()) as { error: Record<string, unknown> };
    const [call] = await triplets();
    expect(call!.data).toMatchObject({ status: "error", http_status: 400 });
    expect((call!.data as { error: unknown }).error).toEqual(upstreamBody.error);
    expect((call!.data as { error: { message: string } }).error.message).toMatch(/maximum context length/);
  });

  it("a hand-posted completions-shaped model_request without model or version reads server {null, null}", async () => {
    const gw = await start(makeStore);
    await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
    const response = { choices: [{ prompt_token_ids: [1, 2], token_ids: [3], text: "x" }] };
    await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "model_request", data: { response } });
    await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "reward", data: {} });
    const [call, reward] = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events?format=triplet"));
    expect(call!.data).toEqual({
      prompt_token_ids: [1, 2],
      response_token_ids: [3],
      response_log_probs: null,
      server: { model: null, version: null },
      response_text: "x", // arclight's extra key (docs/credit.md §1)
    });
    expect(reward!.data).toEqual({ value: null });
  });

  it("a model call naming an attempt id never current is forwarded and recorded under that attempt", async () => {
    const { gw, fake } = await withUpstream();
    const path = "/proxy/rollout/r/attempt/judge-1/mode/train/openai/v1/chat/completions";
    const call = await gw.call("POST", path, { model: "x", messages: [{ role: "user", content: "hi" }] });
    expect(call.status).toBe(200);
    expect(fake.received).toHaveLength(1);
    const events = await json<Event[]>(gw.call("GET", "/api/rollouts/r/events?attempt_id=judge-1"));
    expect(events.map((e) => [e.event_type, e.attempt_id])).toEqual([["model_request", "judge-1"]]);
    const detail = await json<{ rollout: Rollout; attempts: string[] }>(gw.call("GET", "/api/rollouts/r"));
    expect(detail.rollout.status.last_attempt_id).toBe("0");
  });

  it("refuses n > 1 on a train-mode call with 400 naming n, without calling upstream; val mode forwards it", async () => {
    const { fake, proxy } = await withUpstream();
    const body = { model: "x", n: 2, messages: [{ role: "user", content: "hi" }] };
    const train = await proxy("chat/completions", body);
    expect(train.status).toBe(400);
    expect(((await train.json()) as { detail: string }).detail).toMatch(/^n = 2 is refused on train-mode calls/);
    expect(fake.received).toHaveLength(0);
    expect((await proxy("chat/completions", body, "val")).status).toBe(200);
    expect(fake.received[0]!.body.n).toBe(2);
  });
});
