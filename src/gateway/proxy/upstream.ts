/**
 * @module Sends a proxied call upstream: picks the model's endpoint, sends through an undici keep-alive pool, retries.
 *
 * Endpoint choice ({@link EndpointPicker}): endpoints sorted by URL, starting at `fnv1a(rolloutId) mod n`, so every
 * call of one rollout goes to the same server and its growing multi-turn prompt hits that server's prefix cache; an
 * endpoint whose connection fails cools down for `min(max, base * 2^(failures-1))` ms and is skipped meanwhile (when
 * all cool down, the one whose cool-down ends first is tried).
 *
 * Retried: transport failures and answers 408, 409, 429 and 5xx, with full-jitter exponential backoff, at most
 * `maxAttempts` tries, and only while the endpoint's {@link RetryBudget} lasts. A `Retry-After` up to
 * `retryAfterMaxMs` is waited out; a longer one goes to the agent. Not retried: a timeout, and anything after a 2xx
 * stream was handed back (its bytes are already the agent's). A body over `maxResponseBytes` is cut off. Error
 * messages name the model, never the endpoint (agents read them; docs/security.md).
 */
import type { Readable } from "node:stream";
import { Agent } from "undici";
import { type ArclightError, type Model, UpstreamFailed, UpstreamTimeout } from "../../protocol/index.js";
import { type CallAbort, proxyAbortError } from "./call-lifetime.js";
import type { ProxyOptions } from "./options.js";

/** Past this many endpoints the parsed-route cache starts over (endpoints come and go with policy versions). */
const MAX_TARGETS = 1000;

/** Statuses worth another try: the server was busy, restarting or briefly broken. */
const RETRY_STATUSES = new Set([408, 409, 429]);
/** Error codes of a failed or broken connection (Node's net errors and undici's). */
const TRANSPORT_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
]);
const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** One call to send upstream. */
export interface UpstreamRequest {
  /** Path under the endpoint's base URL, e.g. `/chat/completions`. */
  path: string;
  body: string;
  /** The rollout making the call (for sticky endpoint choice). */
  rolloutId: string;
  endpoints: readonly Model[];
  /** True to hand back a 2xx body as a stream instead of reading it. */
  stream: boolean;
  /** Aborts the call (the agent went away, a deadline passed). */
  signal?: CallAbort;
  /** The body and `x-request-id` of try `attempt` (0-based); absent: `body` on every try, no header. */
  attempt?: (attempt: number) => { body: string; requestId: string };
}

/** The upstream's answer after retries. Exactly one of `body` and `stream` is set. */
export interface UpstreamAnswer {
  ok: true;
  endpoint: Model;
  statusCode: number;
  contentType: string;
  /** The whole body: non-stream calls, and every non-2xx answer. */
  body: Buffer | null;
  /** The live body of a 2xx streamed answer. */
  stream: Readable | null;
  /** Tries beyond the first. */
  retryCount: number;
  /** The upstream's `Retry-After`, passed on with a 429 or 503. */
  retryAfter?: string;
}

/** An upstream body past `maxResponseBytes`. */
class ResponseTooLarge extends Error {
  constructor(limitBytes: number) {
    super(`Upstream answer larger than ${limitBytes} bytes (maxResponseBytes)`);
    this.name = "ResponseTooLarge";
  }
}

/** No answer could be had: transport failure after every try, or a timeout. */
export interface UpstreamFailure {
  ok: false;
  /** `UpstreamFailed` (502) or `UpstreamTimeout` (504). */
  error: ArclightError;
  /** The endpoint last tried. */
  endpoint: Model;
  retryCount: number;
}

function errorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  if (typeof e?.code === "string" && e.code !== "UND_ERR_REQ_RETRY") return e.code;
  return typeof e?.cause?.code === "string" ? e.cause.code : undefined;
}

/** Sends proxied calls upstream through one shared keep-alive dispatcher. */
export class UpstreamClient {
  private readonly agent: Agent;
  private readonly budget: RetryBudget;
  /** Parsed routes by endpoint URL, then path: two lookups of strings the caller holds (their hashes are kept). */
  private readonly targets = new Map<string, Map<string, { origin: string; path: string }>>();

  constructor(
    private readonly options: ProxyOptions,
    private readonly picker: EndpointPicker,
  ) {
    this.agent = new Agent({
      connections: options.connections,
      keepAliveTimeout: 30_000,
      headersTimeout: options.upstreamTimeoutMs,
      bodyTimeout: options.upstreamTimeoutMs,
      connect: { timeout: Math.min(options.upstreamTimeoutMs, 30_000) },
    });
    this.budget = new RetryBudget({
      ratio: options.retryBudgetRatio,
      minRetries: options.retryBudgetMinRetries,
      windowMs: options.retryBudgetWindowMs,
    });
  }

  /**
   * Sends a call, retrying as the module doc says.
   * @param request - the call; `endpoints` must not be empty
   * @returns the final answer (which may be a non-2xx the agent should see), or why there is none
   */
  async send(request: UpstreamRequest): Promise<UpstreamAnswer | UpstreamFailure> {
    const failed = new Set<string>();
    let retryCount = 0;
    for (;;) {
      const endpoint = this.picker.pick(request.endpoints, request.rolloutId, failed)!;
      if (retryCount === 0) this.budget.recordRequest(endpoint.endpoint);
      const lastTry = retryCount + 1 >= this.options.maxAttempts;
      let waitMs = 0;
      try {
        const answer = await this.tryOnce(endpoint, request, retryCount);
        this.picker.reportSuccess(endpoint.endpoint);
        const retryable = answer.statusCode >= 500 || RETRY_STATUSES.has(answer.statusCode);
        if (!retryable || lastTry) return answer;
        const retryAfterMs = parseRetryAfterMs(answer.retryAfter);
        // The server asks for a longer wait than the proxy will hold the call: the agent decides, told how long.
        if (retryAfterMs !== null && retryAfterMs > this.options.retryAfterMaxMs) return answer;
        if (!this.budget.tryRetry(endpoint.endpoint)) return answer;
        waitMs = retryAfterMs ?? 0;
      } catch (err) {
        const failure = this.classify(err, endpoint, request, retryCount, lastTry);
        if (failure) return failure;
        failed.add(endpoint.endpoint);
      }
      await this.backoff(retryCount, request.signal, waitMs);
      retryCount++;
    }
  }

  /**
   * A try that threw: the failure to return, or null to retry it (a transport failure with tries and budget left).
   * @throws the error itself when it is none of: an abort, a timeout, a transport failure, a body too large
   */
  private classify(
    err: unknown,
    endpoint: Model,
    request: UpstreamRequest,
    retryCount: number,
    lastTry: boolean,
  ): UpstreamFailure | null {
    const code = errorCode(err);
    if (request.signal?.aborted) {
      const error = proxyAbortError(request.signal) ?? new UpstreamFailed("agent closed the call", { cause: err });
      return this.failure(error, endpoint, retryCount);
    }
    if (err instanceof ResponseTooLarge) return this.failure(new UpstreamFailed(err.message), endpoint, retryCount);
    if (code !== undefined && TIMEOUT_CODES.has(code)) {
      const message = `Upstream of model ${endpoint.model} did not answer within ${this.options.upstreamTimeoutMs} ms`;
      return this.failure(new UpstreamTimeout(message, { cause: err }), endpoint, retryCount);
    }
    if (code === undefined || !TRANSPORT_CODES.has(code)) throw err;
    this.picker.reportFailure(endpoint.endpoint);
    if (lastTry || !this.budget.tryRetry(endpoint.endpoint)) {
      // The model, not the URL: agents read this detail, and the endpoint's address is the admin's (docs/security.md);
      // the recorded model_request event has it (server.endpoint).
      const message = `Upstream of model ${endpoint.model} unreachable after ${retryCount + 1} tries: ${code}`;
      return this.failure(new UpstreamFailed(message, { cause: err }), endpoint, retryCount);
    }
    return null;
  }

  /** Closes every pooled connection. */
  async close(): Promise<void> {
    await this.agent.close();
  }

  private failure(error: ArclightError, endpoint: Model, retryCount: number): UpstreamFailure {
    return { ok: false, error, endpoint, retryCount };
  }

  /** `origin` and `path` of an endpoint's route, parsed once per endpoint and path. */
  private target(endpoint: string, path: string): { origin: string; path: string } {
    let paths = this.targets.get(endpoint);
    if (paths === undefined) {
      if (this.targets.size >= MAX_TARGETS) this.targets.clear();
      paths = new Map();
      this.targets.set(endpoint, paths);
    }
    let target = paths.get(path);
    if (target === undefined) {
      const url = new URL(endpoint.replace(/\/+$/, "") + path);
      target = { origin: url.origin, path: url.pathname + url.search };
      paths.set(path, target);
    }
    return target;
  }

  private async tryOnce(endpoint: Model, request: UpstreamRequest, retryCount: number): Promise<UpstreamAnswer> {
    const target = this.target(endpoint.endpoint, request.path);
    const attempt = request.attempt?.(retryCount);
    const response = await this.agent.request({
      origin: target.origin,
      path: target.path,
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: request.stream ? "text/event-stream" : "application/json",
        ...(attempt ? { "x-request-id": attempt.requestId } : {}),
        ...(this.options.upstreamKey !== "" ? { authorization: `Bearer ${this.options.upstreamKey}` } : {}),
      },
      body: attempt?.body ?? request.body,
      signal: request.signal,
    });
    const contentType = String(response.headers["content-type"] ?? "");
    const retryAfter = response.headers["retry-after"];
    const is2xx = response.statusCode >= 200 && response.statusCode < 300;
    const streamed = request.stream === true && is2xx && contentType.includes("text/event-stream");
    // One object per answer (no spread of a shared base): this runs on every call.
    const answer: UpstreamAnswer = {
      ok: true,
      endpoint,
      statusCode: response.statusCode,
      contentType,
      body: streamed ? null : await this.readBody(response.body, response.headers["content-length"]),
      stream: streamed ? response.body : null,
      retryCount,
    };
    if (retryAfter !== undefined) answer.retryAfter = Array.isArray(retryAfter) ? retryAfter[0]! : retryAfter;
    return answer;
  }

  /**
   * Reads a whole body, at most `maxResponseBytes`.
   * @throws {ResponseTooLarge} the body (or its announced length) is larger; the rest is not read
   */
  private async readBody(body: Readable, contentLength: string | string[] | undefined): Promise<Buffer> {
    const limit = this.options.maxResponseBytes;
    if (Number(contentLength) > limit) {
      body.destroy();
      throw new ResponseTooLarge(limit);
    }
    // Listeners, not `for await`: the async iterator costs a promise and a wake-up per chunk on the hot path.
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      body.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > limit) {
          body.destroy(new ResponseTooLarge(limit));
          return;
        }
        chunks.push(chunk);
      });
      body.once("end", () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
      body.once("error", reject);
      // A body destroyed without an error (undici aborting on the call's signal) neither ends nor errors.
      body.once("close", () => {
        if (!body.readableEnded) reject(body.errored ?? new Error("upstream body closed before its end"));
      });
    });
  }

  /** Full-jitter exponential backoff before try `retryCount + 2`, at least `minDelayMs` (the upstream's Retry-After). */
  private backoff(retryCount: number, signal: CallAbort | undefined, minDelayMs: number): Promise<void> {
    const capMs = Math.min(this.options.retryBackoffMaxMs, this.options.retryBackoffBaseMs * 2 ** retryCount);
    const delayMs = Math.max(minDelayMs, Math.random() * capMs);
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, delayMs);
      function done(): void {
        clearTimeout(timer);
        signal?.off("abort", done);
        resolve();
      }
      signal?.once("abort", done);
    });
  }
}

/** FNV-1a, 32 bit: a stable, fast string hash (same value in every process and run). */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

interface Health {
  failures: number;
  /** Epoch ms until which the endpoint is skipped. */
  coolUntilMs: number;
}

/** Sticky-per-rollout endpoint choice with failure cool-downs. One instance per gateway. */
export class EndpointPicker {
  private readonly health = new Map<string, Health>();

  /**
   * @param cooldownBaseMs - cool-down after an endpoint's first connection failure, ms
   * @param cooldownMaxMs - longest cool-down, ms
   * @param now - clock, epoch ms (tests pass their own)
   */
  constructor(
    private readonly cooldownBaseMs: number,
    private readonly cooldownMaxMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Picks the endpoint for one try of a call (see the module doc).
   * @param exclude - endpoint URLs that already failed this call
   * @returns the chosen endpoint, or undefined when `endpoints` is empty
   */
  pick(endpoints: readonly Model[], rolloutId: string, exclude: ReadonlySet<string> = new Set()): Model | undefined {
    if (endpoints.length === 0) return undefined;
    const sorted = endpoints.length === 1 ? endpoints : [...endpoints].sort(byUrl);
    const start = fnv1a(rolloutId) % sorted.length;
    const now = this.now();
    let fallback: Model | undefined;
    let fallbackUntil = Number.POSITIVE_INFINITY;
    for (let step = 0; step < sorted.length; step++) {
      const candidate = sorted[(start + step) % sorted.length]!;
      const coolUntil = this.health.get(candidate.endpoint)?.coolUntilMs ?? 0;
      if (coolUntil <= now && !exclude.has(candidate.endpoint)) return candidate;
      const rank = exclude.has(candidate.endpoint) ? coolUntil + 1e15 : coolUntil;
      if (rank < fallbackUntil) {
        fallback = candidate;
        fallbackUntil = rank;
      }
    }
    return fallback;
  }

  /** Records a connection failure of `endpoint`, starting or doubling its cool-down. */
  reportFailure(endpoint: string): void {
    const failures = (this.health.get(endpoint)?.failures ?? 0) + 1;
    const coolMs = Math.min(this.cooldownMaxMs, this.cooldownBaseMs * 2 ** (failures - 1));
    this.health.set(endpoint, { failures, coolUntilMs: this.now() + coolMs });
  }

  /** Records that `endpoint` answered: it is healthy again. */
  reportSuccess(endpoint: string): void {
    if (this.health.size > 0) this.health.delete(endpoint);
  }

  /** @returns whether `endpoint` is currently skipped */
  isCoolingDown(endpoint: string): boolean {
    return (this.health.get(endpoint)?.coolUntilMs ?? 0) > this.now();
  }
}

function byUrl(a: Model, b: Model): number {
  return a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0;
}

/** How much retrying one endpoint may take. */
export interface RetryBudgetOptions {
  /** Retries allowed per window beyond the floor, as a fraction of first tries in the window. */
  ratio: number;
  /** Retries always allowed per window (so a quiet endpoint still gets retried). */
  minRetries: number;
  /** Length of the sliding window, ms. */
  windowMs: number;
}

/** Counts per window slot (a tenth of the window). */
interface Slot {
  startMs: number;
  requests: number;
  retries: number;
}

const SLOTS = 10;

/** Per-endpoint counts of first tries and retries over a sliding window. */
export class RetryBudget {
  private readonly byEndpoint = new Map<string, Slot[]>();

  /** @param options - ratio, floor and window */
  constructor(private readonly options: RetryBudgetOptions) {}

  /** Counts a first try to `endpoint`. */
  recordRequest(endpoint: string, nowMs = Date.now()): void {
    this.slot(endpoint, nowMs).requests++;
  }

  /**
   * Takes one retry from `endpoint`'s budget when there is one left.
   * @returns true when the retry may be sent (and is counted), false when the budget is spent
   */
  tryRetry(endpoint: string, nowMs = Date.now()): boolean {
    const slots = this.live(endpoint, nowMs);
    let requests = 0;
    let retries = 0;
    for (const slot of slots) {
      requests += slot.requests;
      retries += slot.retries;
    }
    if (retries >= this.options.minRetries + this.options.ratio * requests) return false;
    this.slot(endpoint, nowMs).retries++;
    return true;
  }

  /** The slots of `endpoint` still inside the window (older ones dropped). */
  private live(endpoint: string, nowMs: number): Slot[] {
    const slots = (this.byEndpoint.get(endpoint) ?? []).filter((s) => s.startMs > nowMs - this.options.windowMs);
    this.byEndpoint.set(endpoint, slots);
    return slots;
  }

  /** The current slot of `endpoint`, created when the last one is older than a tenth of the window. */
  private slot(endpoint: string, nowMs: number): Slot {
    const slots = this.live(endpoint, nowMs);
    const last = slots.at(-1);
    if (last && nowMs - last.startMs < this.options.windowMs / SLOTS) return last;
    const slot = { startMs: nowMs, requests: 0, retries: 0 };
    slots.push(slot);
    return slot;
  }
}

/**
 * Parses a `Retry-After` header: delay-seconds or an HTTP-date.
 * @param value - the header's value (undici gives a string, or an array when repeated)
 * @param nowMs - the current time, ms since the epoch
 * @returns the delay in ms (0 for a date in the past), or null when absent or unparsable
 * @see RFC 9110 §10.2.3
 */
export function parseRetryAfterMs(value: string | string[] | undefined, nowMs = Date.now()): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const dateMs = Date.parse(text);
  return Number.isNaN(dateMs) ? null : Math.max(0, dateMs - nowMs);
}
