import { describe, expect, it } from "vitest";
import { openaiClient, pauseAwareFetch } from "./openai.js";
import { retryAfterMs } from "./retry.js";

const ENV = { baseURL: "http://gw/v1", apiKey: "", rolloutId: "r", attemptId: "0", eventUrl: "http://gw/e" };

/** A fetch answering from a script of responses, recording the bodies it was sent. */
function scripted(responses: (() => Response)[]) {
  const bodies: unknown[] = [];
  const fetch = async (_input: string | URL | Request, init?: RequestInit) => {
    bodies.push(init?.body);
    const next = responses.shift();
    if (next === undefined) throw new Error("no more scripted responses");
    return next();
  };
  return { fetch, bodies };
}

const paused = (retryAfter: string) => () =>
  new Response(JSON.stringify({ detail: "paused" }), {
    status: 429,
    headers: { "retry-after": retryAfter, "x-agl-paused": "true" },
  });

describe("pauseAwareFetch", () => {
  it("waits out 429 + Retry-After, replaying the same body, without counting against the SDK's retries", async () => {
    const { fetch, bodies } = scripted([paused("0.1"), paused("0.1"), () => new Response("{}", { status: 200 })]);
    const started = Date.now();
    const response = await pauseAwareFetch(fetch, 10_000)("http://gw/v1/chat/completions", {
      method: "POST",
      body: '{"a":1}',
    });
    expect(response.status).toBe(200);
    expect(bodies).toEqual(['{"a":1}', '{"a":1}', '{"a":1}']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
  });

  it("hands the 429 back once the pause outlasts pauseWaitMs", async () => {
    const { fetch } = scripted([paused("5"), () => new Response("{}", { status: 200 })]);
    const response = await pauseAwareFetch(fetch, 1000)("http://gw/x", { method: "POST", body: "{}" });
    expect(response.status).toBe(429);
  });

  it("leaves a 429 without Retry-After or pause header to the SDK", async () => {
    const { fetch } = scripted([() => new Response("{}", { status: 429 })]);
    expect((await pauseAwareFetch(fetch, 10_000)("http://gw/x")).status).toBe(429);
  });

  it("stops waiting when the request is aborted", async () => {
    const { fetch } = scripted([paused("30")]);
    const controller = new AbortController();
    const pending = pauseAwareFetch(fetch, 60_000)("http://gw/x", { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("user gave up")), 20);
    await expect(pending).rejects.toThrow("user gave up");
  });
});

describe("retryAfterMs", () => {
  it("reads retry-after-ms, seconds and HTTP dates", () => {
    expect(retryAfterMs(new Headers({ "retry-after-ms": "250" }))).toBe(250);
    expect(retryAfterMs(new Headers({ "retry-after": "2" }))).toBe(2000);
    const date = new Date(Date.now() + 3000).toUTCString();
    expect(retryAfterMs(new Headers({ "retry-after": date }))).toBeGreaterThan(1000);
    expect(retryAfterMs(new Headers({ "retry-after": "soon" }))).toBeUndefined();
    expect(retryAfterMs(new Headers())).toBeUndefined();
  });
});

describe("openaiClient", () => {
  it("points the openai client at the attempt's proxy URL with the gateway key", () => {
    const client = openaiClient({ env: { ...ENV, apiKey: "secret" } });
    expect(client.baseURL).toBe("http://gw/v1");
    expect(client.apiKey).toBe("secret");
    expect(client.maxRetries).toBe(5);
  });
});
