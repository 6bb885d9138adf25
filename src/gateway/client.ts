/**
 * @module `GatewayClient`: the one HTTP client of the gateway API that the controller, trainer and CLI use. Keep-alive
 * (undici), API key, retries with capped exponential backoff for idempotent calls, and error bodies turned back into
 * protocol error classes.
 */
import { randomUUID } from "node:crypto";
import { Agent, request } from "undici";
import type {
  Event,
  EventCreateInput,
  Model,
  ModelInput,
  ResourcesUpdate,
  ResourceVersion,
  Rollout,
  RolloutCreateInput,
  RolloutPatch,
  RolloutState,
  RunPut,
  RunStep,
  RunSummary,
  TerminalPage,
  TripletDedupe,
  TripletEvent,
} from "../protocol/index.js";
import { errorFromResponse, GatewayClientClosed, GatewayUnreachable } from "./client-errors.js";

/** The errors the client raises besides the protocol classes, and the body → error mapping. */
export { errorFromResponse, GatewayClientClosed, GatewayHttpError, GatewayUnreachable } from "./client-errors.js";

/** Options of {@link GatewayClient}. */
export interface GatewayClientOptions {
  /** Gateway base URL, e.g. `http://127.0.0.1:8080` (a trailing slash is ignored). */
  baseUrl: string;
  /** API key sent as `Authorization: Bearer KEY`; empty sends none. */
  key?: string;
  /** Retries after the first try of an idempotent call (transport errors and 5xx); default 4. */
  retries?: number;
  /** First backoff delay (ms), doubled per retry; default 100. */
  retryBackoffBaseMs?: number;
  /** Largest backoff delay (ms); default 2000. */
  retryBackoffMaxMs?: number;
  /** Per-request timeout (ms) for headers and body; default 30000. */
  requestTimeoutMs?: number;
  /** Keep-alive connections per origin; default 32. */
  connections?: number;
}

/** Filter of {@link GatewayClient.listRollouts}. */
export interface ListRolloutsQuery {
  /** Keep rollouts in one of these states (`state_in`). */
  states?: readonly RolloutState[];
  /** Keep only train (`true`) or validation (`false`) rollouts. */
  isTrain?: boolean;
  /** Page size; the gateway's default is 500. */
  limit?: number;
  /** Rows skipped first. */
  offset?: number;
}

/** Answer of `GET /api/rollouts/{id}`. */
export interface RolloutDetail {
  rollout: Rollout;
  /** Attempt ids that have events, oldest first. */
  attempts: string[];
}

/** Body of `POST /proxy/pause`. */
export interface PauseCallBody {
  /** Seconds the proxy tells agents to wait (`Retry-After`). */
  retry_after_seconds?: number;
  /** Why the proxy is paused, e.g. "weight update". */
  reason?: string;
  /** The pause ends by itself after this many seconds unless renewed by another pause (default 300); null: never. */
  lease_seconds?: number | null;
}

/** Answer of `GET /proxy/state`. */
export interface ProxyState {
  paused: boolean;
  retry_after_seconds: number | null;
  reason: string | null;
  /** Proxy calls in flight right now. */
  inflight: number;
  /** When the pause ends by itself unless renewed (epoch seconds); null when running or without a lease. */
  lease_expires_at?: number | null;
}

/** One HTTP call: what to send and whether it is safe to repeat. */
interface Call {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: URLSearchParams;
  body?: unknown;
  /** Safe to send twice: retried on transport errors and 5xx. Others retry only when the connection was refused. */
  idempotent: boolean;
  rolloutId?: string;
}

/** Transport error codes that prove the request never reached the server, so even a non-idempotent call may retry. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "UND_ERR_CONNECT_TIMEOUT", "ENOTFOUND", "EAI_AGAIN"]);

function enc(segment: string): string {
  return encodeURIComponent(segment);
}

/**
 * Typed client of every gateway route. Safe to share; call {@link GatewayClient.close} when done.
 * Every method throws the protocol class named by the error body's `code` (e.g. {@link RolloutNotFound}), a
 * `GatewayHttpError` for other HTTP errors, or `GatewayUnreachable` when retries run out on transport errors.
 */
export class GatewayClient {
  /** The gateway base URL, without a trailing slash. */
  readonly baseUrl: string;
  private readonly key: string;
  private readonly retries: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly timeoutMs: number;
  private readonly dispatcher: Agent;
  private closed = false;

  /** @param options - base URL, key, retry and timeout settings */
  constructor(options: GatewayClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.key = options.key ?? "";
    this.retries = options.retries ?? 4;
    this.backoffBaseMs = options.retryBackoffBaseMs ?? 100;
    this.backoffMaxMs = options.retryBackoffMaxMs ?? 2000;
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
    this.dispatcher = new Agent({ connections: options.connections ?? 32, keepAliveTimeout: 10_000 });
  }

  /** `GET /healthz`. @returns `{status: "ok"}` */
  healthz(): Promise<{ status: string }> {
    return this.send({ method: "GET", path: "/healthz", idempotent: true });
  }

  /**
   * `POST /api/rollouts`. Retried like an idempotent call only when every create names its `rollout_id`.
   * @returns the stored rollouts, in the order given (an existing id returns the stored rollout unchanged)
   * @throws {ValidationFailed} a create violates the schema (422)
   */
  createRollouts(creates: readonly RolloutCreateInput[]): Promise<Rollout[]> {
    const idempotent = creates.every((c) => typeof c.rollout_id === "string");
    return this.send({ method: "POST", path: "/api/rollouts", body: creates, idempotent });
  }

  /** `GET /api/rollouts` (one page). @returns rollouts in creation order */
  listRollouts(query: ListRolloutsQuery = {}): Promise<Rollout[]> {
    const params = new URLSearchParams();
    for (const state of query.states ?? []) params.append("state_in", state);
    if (query.isTrain !== undefined) params.set("is_train", String(query.isTrain));
    if (query.limit !== undefined) params.set("limit", String(query.limit));
    if (query.offset !== undefined) params.set("offset", String(query.offset));
    return this.send({ method: "GET", path: "/api/rollouts", query: params, idempotent: true });
  }

  /**
   * Every rollout matching `query`, following pages of `pageSize` until a short page.
   * @param pageSize - rows per request; default 500
   */
  async listAllRollouts(query: Omit<ListRolloutsQuery, "limit" | "offset"> = {}, pageSize = 500): Promise<Rollout[]> {
    const out: Rollout[] = [];
    for (;;) {
      const page = await this.listRollouts({ ...query, limit: pageSize, offset: out.length });
      out.push(...page);
      if (page.length < pageSize) return out;
    }
  }

  /** `GET /api/rollouts/terminal`. @param after - cursor, 0 for the start @returns a page and its `next_after` */
  terminal(after = 0, limit = 1000): Promise<TerminalPage> {
    const query = new URLSearchParams({ after: String(after), limit: String(limit) });
    return this.send({ method: "GET", path: "/api/rollouts/terminal", query, idempotent: true });
  }

  /** `GET /api/rollouts/{id}`. @throws {RolloutNotFound} unknown rollout */
  getRollout(rolloutId: string): Promise<RolloutDetail> {
    return this.send({ method: "GET", path: `/api/rollouts/${enc(rolloutId)}`, idempotent: true, rolloutId });
  }

  /**
   * `PATCH /api/rollouts/{id}`. Not retried after the request may have reached the gateway: a repeated patch can
   * answer `InvalidTransition` although the first one was applied.
   * @throws {RolloutNotFound} unknown rollout
   * @throws {InvalidTransition} a move the state machine forbids (409)
   * @throws {StaleAttempt} `last_attempt_id` names a superseded attempt (409)
   * @throws {Conflict} `last_attempt_id` names an attempt the rollout never had (409)
   * @throws {ValidationFailed} a field other than `status.*`, or a bad enum (422)
   */
  patchRollout(rolloutId: string, patch: RolloutPatch): Promise<Rollout> {
    return this.send({
      method: "PATCH",
      path: `/api/rollouts/${enc(rolloutId)}`,
      body: patch,
      idempotent: false,
      rolloutId,
    });
  }

  /**
   * `POST /api/leases`: renews the leases of the attempts a controller runs (see `rollout-leases.ts`). Idempotent.
   * @param leases - rollout and attempt of each running agent
   * @param ttlSeconds - the leases end this many seconds from now unless renewed
   * @returns the rollouts renewed, and those rejected (no longer running on that attempt)
   */
  renewLeases(
    leases: readonly { rollout_id: string; attempt_id: string }[],
    ttlSeconds: number,
  ): Promise<{ renewed: string[]; rejected: string[] }> {
    return this.send({
      method: "POST",
      path: "/api/leases",
      body: { ttl_seconds: ttlSeconds, leases },
      idempotent: true,
    });
  }

  /** `DELETE /api/rollouts/{id}`; succeeds also when the rollout does not exist. */
  async deleteRollout(rolloutId: string): Promise<void> {
    await this.send({ method: "DELETE", path: `/api/rollouts/${enc(rolloutId)}`, idempotent: true, rolloutId });
  }

  /**
   * `POST /api/rollouts/{id}/attempt/{aid}/events` with a list. Events without an `event_id` get a fresh UUID, so
   * every post is idempotent and retried.
   * @returns the stored events, in the order given
   * @throws {RolloutNotFound} unknown rollout
   * @throws {StaleAttempt} `attemptId` is not the current attempt (409)
   */
  postEvents(rolloutId: string, attemptId: string, events: readonly EventCreateInput[]): Promise<Event[]> {
    const body = events.map((e) => ({ ...e, event_id: e.event_id ?? randomUUID() }));
    const path = `/api/rollouts/${enc(rolloutId)}/attempt/${enc(attemptId)}/events`;
    return this.send({ method: "POST", path, body, idempotent: true, rolloutId });
  }

  /** One event; see {@link GatewayClient.postEvents}. @returns the stored event */
  async postEvent(rolloutId: string, attemptId: string, event: EventCreateInput): Promise<Event> {
    const body = { ...event, event_id: event.event_id ?? randomUUID() };
    const path = `/api/rollouts/${enc(rolloutId)}/attempt/${enc(attemptId)}/events`;
    return this.send({ method: "POST", path, body, idempotent: true, rolloutId });
  }

  /**
   * `GET /api/rollouts/{id}/events`: events of the rollout's current attempt (`status.last_attempt_id`, `"0"` while null).
   * @param options.format - `triplet` trims `model_request` and `reward` data to the triplet view
   */
  getEvents(rolloutId: string, options: { eventType?: string; format?: "triplet" } = {}): Promise<Event[]> {
    const query = new URLSearchParams();
    if (options.eventType !== undefined) query.set("event_type", options.eventType);
    if (options.format !== undefined) query.set("format", options.format);
    const path = `/api/rollouts/${enc(rolloutId)}/events`;
    return this.send({ method: "GET", path, query, idempotent: true, rolloutId });
  }

  /**
   * `GET /api/rollouts/{id}/events?format=triplet&dedupe=retries`: the current attempt's events in the triplet view
   * (`model_request` as token ids and logprobs, `reward` as its value), what the trainer reads. It asks for arclight's
   * `retries` rule whatever the gateway's default: every sample the agent went on with is trained
   * (docs/training-correctness.md).
   * @param dedupe - which repeated calls to leave out; `prompt` is Agent Lightning v1.0's rule
   * @throws {RolloutNotFound} unknown rollout
   */
  getTripletEvents(rolloutId: string, dedupe: TripletDedupe = "retries"): Promise<TripletEvent[]> {
    const path = `/api/rollouts/${enc(rolloutId)}/events`;
    const query = new URLSearchParams({ format: "triplet", dedupe });
    return this.send({ method: "GET", path, query, idempotent: true, rolloutId });
  }

  /**
   * `POST /api/resources/{name}`: stores a new version of a resource. Not retried after it may have reached the
   * gateway (a repeat would store one more version).
   * @returns the stored version
   * @throws {ValidationFailed} a bad name or a body without `value` (422)
   */
  addResource(name: string, value: unknown): Promise<ResourceVersion> {
    return this.send({ method: "POST", path: `/api/resources/${enc(name)}`, body: { value }, idempotent: false });
  }

  /**
   * `GET /api/resources/{name}[?version=N]`.
   * @returns the latest version, or version N
   * @throws {ResourceNotFound} no such resource or version
   */
  getResource(name: string, version?: number): Promise<ResourceVersion> {
    const query = new URLSearchParams(version === undefined ? {} : { version: String(version) });
    return this.send({ method: "GET", path: `/api/resources/${enc(name)}`, query, idempotent: true });
  }

  /** `GET /api/resources/latest`: the latest of every resource in AGL v1.0's `ResourcesUpdate` shape. */
  latestResources(): Promise<ResourcesUpdate> {
    return this.send({ method: "GET", path: "/api/resources/latest", idempotent: true });
  }

  /** `POST /api/models`: upsert endpoints by (model, endpoint). @returns the stored models */
  upsertModels(models: readonly ModelInput[]): Promise<Model[]> {
    return this.send({ method: "POST", path: "/api/models", body: models, idempotent: true });
  }

  /** `DELETE /api/models`: removes every registered endpoint. */
  async deleteModels(): Promise<void> {
    await this.send({ method: "DELETE", path: "/api/models", idempotent: true });
  }

  /**
   * `GET /api/dashboard/detokenize`: the text of each token id, decoded through a server registered for the model.
   * @param model - the model name the calls were made with
   * @param ids - token ids, at most 4,096
   * @returns id → text for each id a server decoded; empty when no live server serves the model
   */
  async detokenize(model: string, ids: readonly number[]): Promise<Record<string, string>> {
    const query = new URLSearchParams({ model, ids: ids.join(",") });
    const answer = await this.send<{ texts: Record<string, string> }>({
      method: "GET",
      path: "/api/dashboard/detokenize",
      query,
      idempotent: true,
    });
    return answer.texts;
  }

  /** `POST /proxy/pause`: new proxy calls get 429 with `Retry-After` until {@link GatewayClient.resumeProxy}. */
  pauseProxy(pause: PauseCallBody = {}): Promise<ProxyState> {
    return this.send({ method: "POST", path: "/proxy/pause", body: pause, idempotent: true });
  }

  /** `POST /proxy/resume`. */
  resumeProxy(): Promise<ProxyState> {
    return this.send({ method: "POST", path: "/proxy/resume", body: {}, idempotent: true });
  }

  /** `GET /proxy/state`: paused or not, and how many proxy calls are in flight. */
  proxyState(): Promise<ProxyState> {
    return this.send({ method: "GET", path: "/proxy/state", idempotent: true });
  }

  /**
   * `PUT /api/runs/{name}`: creates a dashboard run or replaces its config (idempotent).
   * @param name - the run name (letters, digits, `.`, `_`, `-`)
   * @param run - config and planned number of steps
   */
  putRun(name: string, run: Partial<RunPut>): Promise<RunSummary> {
    return this.send({ method: "PUT", path: `/api/runs/${enc(name)}`, body: run, idempotent: true });
  }

  /**
   * `POST /api/runs/{name}/steps`: a run's step metrics. Idempotent: a re-posted step replaces itself.
   * @throws {NotFound} the run was not created with {@link GatewayClient.putRun}
   */
  postRunSteps(name: string, steps: readonly RunStep[]): Promise<RunSummary> {
    return this.send({ method: "POST", path: `/api/runs/${enc(name)}/steps`, body: steps, idempotent: true });
  }

  /** Closes the keep-alive connections; every later call throws {@link GatewayClientClosed} at once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.dispatcher.close();
  }

  /** Sends `call`, retrying per its idempotency, and parses the JSON answer (undefined for 204). */
  private async send<T>(call: Call): Promise<T> {
    for (let retry = 0; ; retry++) {
      // A closed client can never succeed: say so instead of retrying a destroyed connection pool.
      if (this.closed) throw new GatewayClientClosed(`${call.method} ${call.path}: the GatewayClient was closed`);
      const outcome = await this.once(call);
      if (outcome.kind === "ok") return outcome.value as T;
      const canRetry = retry < this.retries && isRetryable(outcome, call.idempotent);
      if (!canRetry) throw outcome.error;
      await sleep(Math.min(this.backoffMaxMs, this.backoffBaseMs * 2 ** retry) * (0.75 + Math.random() * 0.5));
    }
  }

  private async once(call: Call): Promise<Outcome> {
    const url = `${this.baseUrl}${call.path}${call.query && call.query.size > 0 ? `?${call.query}` : ""}`;
    const headers: Record<string, string> = {};
    if (this.key !== "") headers.authorization = `Bearer ${this.key}`;
    if (call.body !== undefined) headers["content-type"] = "application/json";
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(url, {
        method: call.method,
        headers,
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
        dispatcher: this.dispatcher,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
    } catch (cause) {
      const code = String((cause as { code?: unknown }).code ?? "");
      const error = new GatewayUnreachable(`${call.method} ${call.path}: ${(cause as Error).message}`, { cause });
      return { kind: "transport", code, error };
    }
    const text = await response.body.text();
    const body = text === "" ? undefined : parseJson(text);
    if (response.statusCode < 400) return { kind: "ok", value: body };
    const error = errorFromResponse(response.statusCode, body ?? { detail: text }, { rolloutId: call.rolloutId });
    return response.statusCode >= 500 ? { kind: "server", error } : { kind: "client", error };
  }
}

type Outcome =
  | { kind: "ok"; value: unknown }
  | { kind: "server"; error: Error }
  | { kind: "client"; error: Error }
  | { kind: "transport"; code: string; error: Error };

/** 4xx never; 5xx when idempotent; a transport error when idempotent or when the request surely was not sent. */
function isRetryable(outcome: Exclude<Outcome, { kind: "ok" }>, idempotent: boolean): boolean {
  if (outcome.kind === "client") return false;
  if (outcome.kind === "server") return idempotent;
  return idempotent || NOT_SENT_CODES.has(outcome.code);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { detail: text };
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
