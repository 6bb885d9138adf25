/**
 * Durable before acknowledged, on a real gateway over a real SQLite file, with a second process holding the file's
 * write lock (BEGIN IMMEDIATE), as another process or a backup tool can: the gateway keeps answering, a streamed
 * call's last event and `[DONE]` wait for the commit, a call whose event cannot be committed is never answered as a
 * success, and a gateway killed (-9) between the last upstream chunk and the commit never showed the agent `[DONE]`.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";
import { FakeVllm } from "../src/gateway/testing/fake-vllm.js";
import { chatRequest, sseData } from "../src/gateway/testing/proxy-client.js";
import { startTestGateway, type TestGateway } from "../src/gateway/testing/serve.js";
import { startGatewayChild } from "../src/run/gateway-child.js";
import { SqliteStore } from "../src/store/sqlite.js";
import { holdSqliteLock, type SqliteLockHolder } from "../src/store/testing/sqlite-lock-holder.js";
import { tempDir } from "../src/testing/temp-dir.js";

const KEY = "test-key";
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function fakeUpstream(): Promise<FakeVllm> {
  const fake = await FakeVllm.start({ content: "one two three four" });
  cleanups.push(() => fake.close());
  return fake;
}

async function lockHolder(path: string): Promise<SqliteLockHolder> {
  const holder = await holdSqliteLock(path);
  cleanups.push(() => holder.release());
  return holder;
}

/** A gateway in this process on a SQLite file, with `policy` served by `fake` and rollout `r` created. */
async function sqliteGateway(fake: FakeVllm, lockWaitMs: number): Promise<{ gw: TestGateway; path: string }> {
  const path = join(tempDir("arclight-durable-"), "gateway.db");
  const gw = await startTestGateway({ key: KEY, model_name: "policy" }, SqliteStore.open(path, { lockWaitMs }));
  cleanups.push(() => gw.close());
  await gw.call("POST", "/api/models", [{ model: "policy", endpoint: fake.url }]);
  await gw.call("POST", "/api/rollouts", [{ rollout_id: "r", input: {} }]);
  return { gw, path };
}

function proxyUrl(base: string, path = "chat/completions"): string {
  return `${base}/proxy/rollout/r/attempt/0/mode/train/openai/v1/${path}`;
}

function postCall(base: string, body: Record<string, unknown>, path?: string): Promise<Response> {
  return fetch(path ? path.replace("{base}", base) : proxyUrl(base), {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** Reads an SSE body in pieces: `untilQuiet(ms)` returns what came until the body was quiet for `ms`, or ended. */
class BodyReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  /** A read still in flight when the last `untilQuiet` gave up waiting: its chunk belongs to the next call. */
  private pending: Promise<{ done: boolean; value?: Uint8Array }> | null = null;

  constructor(response: Response) {
    this.reader = response.body!.getReader();
  }

  async untilQuiet(quietMs: number): Promise<{ text: string; ended: boolean }> {
    let text = "";
    for (;;) {
      this.pending ??= this.reader.read().catch(() => ({ done: true }));
      let timer: NodeJS.Timeout | undefined;
      const quiet = new Promise<"quiet">((resolve) => (timer = setTimeout(() => resolve("quiet"), quietMs)));
      const next = await Promise.race([this.pending, quiet]);
      clearTimeout(timer);
      if (next === "quiet") return { text, ended: false };
      this.pending = null;
      if (next.done) return { text, ended: true };
      text += this.decoder.decode(next.value);
    }
  }
}

async function modelRequestCount(path: string): Promise<number> {
  const store = SqliteStore.open(path);
  try {
    return (await store.listEvents("r", { eventType: "model_request" })).length;
  } finally {
    await store.close();
  }
}

describe("durable before acknowledged (SQLite, another process holding the write lock)", () => {
  it("keeps /healthz fast and holds a stream's last event and [DONE] until its event is committed", async () => {
    const fake = await fakeUpstream();
    const { gw, path } = await sqliteGateway(fake, 30_000);
    const holder = await lockHolder(path);
    const response = await postCall(gw.url, chatRequest({ stream: true }));
    const reader = new BodyReader(response);
    const before = await reader.untilQuiet(1000);
    expect(before.ended).toBe(false);
    expect(sseData(before.text).length).toBeGreaterThan(0);
    expect(before.text).not.toContain("[DONE]");
    expect(before.text).not.toContain('"finish_reason":"stop"'); // the last chunk is held back too
    const latenciesMs: number[] = [];
    for (let i = 0; i < 10; i++) {
      const startedAt = performance.now();
      expect((await gw.call("GET", "/healthz")).status).toBe(200);
      latenciesMs.push(performance.now() - startedAt);
    }
    // A blocking lock wait would stall /healthz for the whole lock. Generous bound for a loaded CI machine.
    expect(Math.max(...latenciesMs)).toBeLessThan(500);
    await holder.release();
    const after = await reader.untilQuiet(10_000);
    expect(after.ended).toBe(true);
    const events = sseData(before.text + after.text);
    expect(events.at(-1)).toBe("[DONE]");
    expect(events.at(-2)).toContain('"finish_reason":"stop"');
    expect(await modelRequestCount(path)).toBe(1);
  });

  it("answers a stream whose event cannot be committed with an error event instead of [DONE]", async () => {
    const fake = await fakeUpstream();
    const { gw, path } = await sqliteGateway(fake, 300);
    const holder = await lockHolder(path);
    const answer = await (await postCall(gw.url, chatRequest({ stream: true }))).text();
    const events = sseData(answer);
    expect(events).not.toContain("[DONE]");
    expect(JSON.parse(events.at(-1)!).error).toMatchObject({ code: 503, message: expect.stringMatching(/retry/) });
    await holder.release();
    expect(await modelRequestCount(path)).toBe(0);
  });

  it.each([
    [
      "Responses",
      "{base}/proxy/rollout/r/attempt/0/mode/train/openai/v1/responses",
      { input: "hi" },
      "response.completed",
    ],
    [
      "Anthropic Messages",
      "{base}/proxy/rollout/r/attempt/0/mode/train/anthropic/v1/messages",
      { max_tokens: 16, messages: [{ role: "user", content: "hi" }] },
      "message_stop",
    ],
  ])(
    "answers a %s stream whose event cannot be committed with its error event, not its end",
    async (_api, path, body, end) => {
      const fake = await fakeUpstream();
      const { gw, path: dbPath } = await sqliteGateway(fake, 300);
      const holder = await lockHolder(dbPath);
      const answer = await (await postCall(gw.url, { model: "m", stream: true, ...body }, path)).text();
      expect(answer).toMatch(/event: error\ndata: [^\n]*could not be recorded/);
      expect(answer).not.toContain(end);
      await holder.release();
      expect(await modelRequestCount(dbPath)).toBe(0);
    },
  );

  it("answers a non-stream call whose event cannot be committed with 503 and Retry-After, not 200", async () => {
    const fake = await fakeUpstream();
    const { gw, path } = await sqliteGateway(fake, 300);
    const holder = await lockHolder(path);
    const response = await postCall(gw.url, chatRequest());
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("1");
    expect(await response.json()).toMatchObject({ code: "store_unavailable", retry_after_seconds: 1 });
    await holder.release();
    expect(await modelRequestCount(path)).toBe(0);
  });

  it("answers an event POST that cannot be committed with 503 and Retry-After, not 500", async () => {
    const fake = await fakeUpstream();
    const { gw, path } = await sqliteGateway(fake, 300);
    const holder = await lockHolder(path);
    const response = await gw.call("POST", "/api/rollouts/r/attempt/0/events", { event_type: "log", data: {} });
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("1");
    await holder.release();
  });
});

/** `arclight gateway` as a child process on a SQLite file; resolves with its URL. */
async function spawnGateway(path: string): Promise<{ child: ChildProcess; url: string }> {
  const gateway = await startGatewayChild(path, "policy", [], KEY);
  cleanups.push(() => gateway.stop());
  return { child: gateway.process, url: gateway.url };
}

describe("kill -9 of the gateway between the last upstream chunk and the commit", () => {
  it("the agent never saw [DONE] for the call whose event was lost", async () => {
    const fake = await fakeUpstream();
    const path = join(tempDir("arclight-durable-kill-"), "gateway.db");
    const { child, url } = await spawnGateway(path);
    const admin = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
    const models = [{ model: "policy", endpoint: fake.url }];
    await fetch(`${url}/api/models`, { method: "POST", headers: admin, body: JSON.stringify(models) });
    const rollouts = [{ rollout_id: "r", input: {} }];
    await fetch(`${url}/api/rollouts`, { method: "POST", headers: admin, body: JSON.stringify(rollouts) });
    // The lock keeps the commit from happening: the gateway has the whole answer, and nothing committed.
    const holder = await lockHolder(path);
    const response = await postCall(url, chatRequest({ stream: true }));
    const reader = new BodyReader(response);
    const before = await reader.untilQuiet(1000);
    expect(fake.received).toHaveLength(1);
    expect(sseData(before.text).length).toBeGreaterThan(0);
    child.kill("SIGKILL");
    await once(child, "exit");
    const after = await reader.untilQuiet(5000);
    expect(after.ended).toBe(true);
    expect(before.text + after.text).not.toContain("[DONE]");
    await holder.release();
    expect(await modelRequestCount(path)).toBe(0);
  });
});
