/**
 * @module An `openai` client pointed at the gateway proxy for this attempt, whose requests wait out a paused proxy
 * (429 with `Retry-After` / `X-Agl-Paused`) for as long as the pause lasts, up to `pauseWaitMs`.
 */
import { createRequire } from "node:module";
import type { ClientOptions, OpenAI } from "openai";
import { type AgentEnv, fromEnv } from "./env.js";
import { retryAfterMs, sleep } from "./retry.js";
import { activeTraceparent } from "./span-context.js";

/** `fetch` as the openai SDK calls it. */
type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Options of {@link openaiClient}; any other `openai` `ClientOptions` pass through. */
export interface OpenAIClientOptions extends Omit<ClientOptions, "baseURL" | "apiKey" | "fetch"> {
  /** Rollout context; default {@link fromEnv}(). */
  env?: AgentEnv;
  /** Longest total wait (ms) for a paused proxy per request; default 3 600 000 (1 h). */
  pauseWaitMs?: number;
  /** Underlying fetch; default the global one. */
  fetch?: FetchLike;
}

/**
 * Wraps `fetch` so a 429 carrying `Retry-After` (or `X-Agl-Paused: true`) is retried after the advised wait, again
 * and again until the deadline — without using up the SDK's own `maxRetries`, which stay for real errors. A request
 * whose body is a stream cannot be replayed and gets the 429 back.
 * @param base - the fetch to wrap
 * @param pauseWaitMs - longest total wait (ms) per request
 * @returns a fetch with the same signature
 */
export function pauseAwareFetch(base: FetchLike, pauseWaitMs: number): FetchLike {
  return async (input, init) => {
    const deadline = Date.now() + pauseWaitMs;
    const replayable = init?.body === undefined || init.body === null || typeof init.body === "string";
    for (;;) {
      const response = await base(input, init);
      if (response.status !== 429 || !replayable) return response;
      const advisedMs = retryAfterMs(response.headers);
      const paused = response.headers.get("x-agl-paused") === "true";
      if (advisedMs === undefined && !paused) return response;
      // Clamp: never hammer (>= 100 ms), re-check at least every minute.
      const waitMs = Math.min(60_000, Math.max(100, advisedMs ?? 1000));
      if (Date.now() + waitMs > deadline) return response;
      await response.body?.cancel();
      await sleep(waitMs, init?.signal);
    }
  };
}

/**
 * Builds an `openai` client for this rollout attempt: base URL = the gateway proxy (`AGL_OPENAI_BASE_URL`), API key
 * = `AGL_KEY`, pauses waited out (see {@link pauseAwareFetch}), `maxRetries` 5 for other transient errors; a call made
 * inside a built-in tracer span carries its W3C `traceparent`.
 * @param options - openai `ClientOptions` (except baseURL/apiKey/fetch), plus `env`, `pauseWaitMs`, `fetch`
 * @returns an `OpenAI` instance (openai v6, an optional peer dependency)
 * @throws {NotInRollout} outside a rollout
 * @throws {Error} when the `openai` package is not installed
 */
export function openaiClient(options: OpenAIClientOptions = {}): OpenAI {
  const { env: givenEnv, pauseWaitMs = 3_600_000, fetch: baseFetch = globalThis.fetch, ...rest } = options;
  const env = givenEnv ?? fromEnv();
  const OpenAIClass = loadOpenAI();
  return new OpenAIClass({
    maxRetries: 5,
    ...rest,
    baseURL: env.baseURL,
    // The SDK refuses an empty key; an open gateway ignores whatever is sent.
    apiKey: env.apiKey === "" ? "arclight-no-key" : env.apiKey,
    fetch: pauseAwareFetch(traceparentFetch(baseFetch), pauseWaitMs),
  });
}

/**
 * Adds the built-in tracer's `traceparent` (when the call is made inside `span()`) unless the request has one, so
 * the gateway records the call's enclosing span.
 */
function traceparentFetch(base: FetchLike): FetchLike {
  return (input, init) => {
    const traceparent = activeTraceparent();
    if (traceparent === undefined) return base(input, init);
    const headers = new Headers(init?.headers);
    if (!headers.has("traceparent")) headers.set("traceparent", traceparent);
    return base(input, { ...init, headers });
  };
}

/** Loads `openai` lazily, so `arclight/agent` works without it for agents that only emit events. */
function loadOpenAI(): typeof OpenAI {
  const require = createRequire(import.meta.url);
  try {
    return (require("openai") as { OpenAI: typeof OpenAI }).OpenAI;
  } catch (cause) {
    throw new Error("openaiClient() needs the `openai` package (v6): npm install openai", { cause });
  }
}
