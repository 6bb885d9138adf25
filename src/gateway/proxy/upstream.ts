/**
 * @module Upstream HTTP for the proxy: an undici keep-alive pool per endpoint, timeouts, retries and size limits.
 *
 * Retried: transport failures (refused, reset, unreachable, connect timeout) and answers 408, 409, 429 and 5xx, with
 * exponential backoff and full jitter (`random(0, min(max, base * 2^retry))`), at most `maxAttempts` tries in all,
 * and only while the endpoint's retry budget lasts (`retry-budget.ts`). An answer's `Retry-After` is waited out when
 * it is at most `retryAfterMaxMs`; a longer one ends the retries and goes to the agent with the answer. A transport
 * failure also puts the endpoint into cool-down (see `endpoint-picker.ts`), so the next try may go to another
 * endpoint. Not retried: a timeout (waiting another 600 s six times helps no one) and anything after a 2xx stream has
 * been handed back (its bytes go to the agent as they arrive; a retry would duplicate them). A body larger than
 * `maxResponseBytes` is cut off. Error messages never name the endpoint (agents read them; the log has it).
 */
import type { Readable } from "node:stream";
import { Agent } from "undici";
import { type ArclightError, type Model, UpstreamFailed, UpstreamTimeout } from "../../protocol/index.js";
import { type CallAbort, proxyAbortError } from "./call-lifetime.js";
import type { EndpointPicker } from "./endpoint-picker.js";
import type { ProxyOptions } from "./options.js";
import { parseRetryAfterMs, RetryBudget } from "./retry-budget.js";

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
  /** The serialized JSON body. */
  body: string;
  /** The rollout making the call (for sticky endpoint choice). */
  rolloutId: string;
  /** The model's registered endpoints. */
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
  /** The upstream's `Retry-After` header, passed on to the agent with a 429 or 503. */
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

  /**
   * @param options - timeout, retry and pool options
   * @param picker - endpoint choice and cool-downs
   */
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
