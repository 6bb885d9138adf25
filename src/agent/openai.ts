/** @module An `openai` client on this attempt's gateway proxy that waits out a paused proxy, up to `pauseWaitMs`. */
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
 * Retries a 429 with `Retry-After` or `X-Agl-Paused` until the deadline without spending the SDK's `maxRetries`;
 * a streamed body cannot be replayed and gets the 429 back.
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
 * An `openai` client (v6, optional peer) for this attempt: pauses waited out, `maxRetries` 5, `traceparent` sent.
 * @throws {NotInRollout} outside a rollout; `Error` when `openai` is not installed
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

/** Adds the built-in tracer's `traceparent` unless the request has one. */
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
