/**
 * @module The gateway's direct path for model calls: a well-formed `POST` to a proxy call endpoint is served on the
 * bare Node request, before Fastify routes it, by the same handler as the Fastify route (`proxy/proxy-service.ts`),
 * with the same answers, `x-request-id`, log line and metrics. It saves Fastify's per-request work on the one path
 * agents call thousands of times a minute (docs/benchmarks.md, issue 24).
 *
 * The path takes a request only when everything Fastify would check before the handler is plainly fine:
 * - `POST /proxy/rollout/{rid}/attempt/{aid}/mode/{train|val}[/agent/{name}]/{endpoint}` with ids of
 *   `[A-Za-z0-9._~:-]` (nothing to percent-decode), 1–1000 characters, and one of the call endpoints;
 * - `content-type: application/json` (optionally `; charset=utf-8`) and a `content-length` within the body limit,
 *   no `transfer-encoding`;
 * - a valid admin key, or an agent token for this rollout, attempt and mode;
 * - the gateway not closing.
 * Anything else goes to Fastify, which answers it as always (401, 403, 404, 413, 415, 503 …). Once the path has taken
 * a request, it answers everything itself: an unreadable or invalid body (400), and whatever the handler throws.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import type { FastifyBaseLogger, FastifyInstance, FastifyServerFactory } from "fastify";
import { sendErrorAnswer } from "../http/error-handler.js";
import { agentRefusal } from "./access.js";
import { makeCredentialCheck, type Principal } from "./auth.js";
import { fastifyJsonParse, type JsonBodyText, type JsonParse, parseJsonText } from "./json-body.js";
import { countRouteAnswer, countStaleWrite, type GatewayMetrics } from "./metrics.js";
import { AGENT_HEADER } from "./proxy/agent-identity.js";
import { RawReply } from "./proxy/agent-reply.js";
import { CALL_ENDPOINTS, type CallEndpoint, PROXY_ROUTE_PREFIX, type ProxyService } from "./proxy/proxy-service.js";
import { logRequestEnd, requestId } from "./request-log.js";

/** What {@link ProxyLane} needs beside the app it serves with. */
export interface ProxyLaneOptions {
  /** The handler the app's proxy routes use; its options give the body limit. */
  service: ProxyService;
  /** The gateway's admin key; empty: no auth. */
  key: string;
  /** The app's metrics; absent: nothing counted (the proxy test harness). */
  metrics?: GatewayMetrics;
  /** True once the app has begun to close: the path then leaves every request to Fastify (503, `connection: close`). */
  isClosing(): boolean;
}

const ID = "[A-Za-z0-9._~:-]{1,1000}";
const CALL_PATH = new RegExp(
  `^/proxy/rollout/(${ID})/attempt/(${ID})/mode/(train|val)(?:/agent/(${ID}))?/(${Object.keys(CALL_ENDPOINTS).join("|")})(\\?.*)?$`,
);
const JSON_TYPE = /^application\/json(?:\s*;\s*charset=utf-?8)?$/i;
const DIGITS = /^\d{1,12}$/;

/** The route pattern of each endpoint, as Fastify names it in metrics and access checks. */
const ROUTE_OF = Object.fromEntries(
  Object.keys(CALL_ENDPOINTS).map((endpoint) => [endpoint, `${PROXY_ROUTE_PREFIX}/${endpoint}`]),
) as Record<CallEndpoint, string>;

/** A request the path has taken: what it matched, and its accounting. */
interface Taken {
  endpoint: CallEndpoint;
  rid: string;
  aid: string;
  mode: string;
  /** The URL as routed (an `/agent/{name}` segment moved into the header, as Fastify's `rewriteUrl` does). */
  url: string;
  length: number;
}

/** The gateway's direct path for model calls; see the module comment for what it takes. */
export class ProxyLane {
  private readonly credential: (headers: IncomingMessage["headers"]) => Principal | undefined;
  /** The app's logger (with its serializers); each request logs through a child with `reqId` and `rolloutId`. */
  private readonly log: FastifyBaseLogger;
  /** Fastify's own JSON parser, so both paths parse alike. */
  private readonly parseJson: JsonParse;
  private readonly bodyLimitBytes: number;

  /**
   * @param app - the Fastify app whose proxy routes this path serves beside (its logger and JSON parser are used)
   * @param options - the service, key, metrics and closing state
   */
  constructor(
    app: FastifyInstance,
    private readonly options: ProxyLaneOptions,
  ) {
    this.credential = makeCredentialCheck(options.key);
    this.log = app.log;
    this.parseJson = fastifyJsonParse(app);
    this.bodyLimitBytes = options.service.ctx.options.bodyLimitBytes;
  }

  /**
   * Serves `req` when it is a call this path takes.
   * @returns true when the path took the request (it answers it); false: hand it to Fastify untouched
   */
  serve(req: IncomingMessage, res: ServerResponse): boolean {
    const taken = this.take(req);
    if (taken === undefined) return false;
    this.answer(req, res, taken).catch((err) => {
      // answer() handles its errors; this is a last guard, so a bug cannot become an unhandled rejection.
      this.log.error({ err }, "proxy direct path failed");
      res.destroy();
    });
    return true;
  }

  /** The call, when the path takes it; undefined leaves the request to Fastify (nothing of it read or changed). */
  private take(req: IncomingMessage): Taken | undefined {
    if (req.method !== "POST") return undefined;
    const url = req.url ?? "";
    if (!url.startsWith("/proxy/rollout/")) return undefined;
    const match = CALL_PATH.exec(url);
    if (match === null) return undefined;
    const headers = req.headers;
    const type = headers["content-type"];
    const declared = headers["content-length"];
    if (type === undefined || !JSON_TYPE.test(type) || headers["transfer-encoding"] !== undefined) return undefined;
    if (declared === undefined || !DIGITS.test(declared)) return undefined;
    const length = Number(declared);
    if (length > this.bodyLimitBytes || this.options.isClosing()) return undefined;
    const [, rid = "", aid = "", mode = "", agent, endpoint = "", query = ""] = match;
    let principal: Principal | undefined;
    try {
      principal = this.credential(headers);
    } catch {
      return undefined;
    }
    if (principal === undefined) return undefined;
    const route = ROUTE_OF[endpoint as CallEndpoint];
    if (principal.kind === "agent" && agentRefusal(principal.claims, "POST", route, { rid, aid, mode }) !== undefined) {
      return undefined;
    }
    let routed = url;
    if (agent !== undefined) {
      headers[AGENT_HEADER] = agent;
      routed = `/proxy/rollout/${rid}/attempt/${aid}/mode/${mode}/${endpoint}${query}`;
    }
    return { endpoint: endpoint as CallEndpoint, rid, aid, mode, url: routed, length };
  }

  /** Reads the body, runs the handler, answers errors; counts and logs the answer once it is sent. */
  private async answer(req: IncomingMessage, res: ServerResponse, taken: Taken): Promise<void> {
    const started = performance.now();
    const id = requestId(req.headers["x-request-id"]);
    const log = this.log.child({ reqId: id, rolloutId: taken.rid });
    const reply = new RawReply(res, this.options.isClosing, (err) => log.warn({ err }, "agent stream failed"));
    reply.header("x-request-id", id);
    this.accountFor(req, res, taken, log, started);
    try {
      let body: JsonBodyText | undefined;
      try {
        body = parseJsonText(this.parseJson, await readBody(req, taken.length));
      } catch (err) {
        // As Fastify after a body it could not read or parse: the client may still be sending.
        reply.header("connection", "close");
        throw err;
      }
      await this.options.service.serve(
        { endpoint: taken.endpoint, params: taken, body, headers: req.headers, log },
        reply,
      );
    } catch (err) {
      if (this.options.metrics) countStaleWrite(this.options.metrics, err, ROUTE_OF[taken.endpoint]);
      if (!reply.sent) sendErrorAnswer(err, log, reply, true);
      else if (!res.writableEnded) {
        log.error({ err }, "request failed after its answer began");
        res.destroy(err as Error);
      }
    }
  }

  /**
   * Once the answer is sent (or the response failed): `arclight_http_requests_total` and the latency histogram, and
   * the `request completed` (or `request errored`) line, as Fastify writes them for its routes.
   */
  private accountFor(
    req: IncomingMessage,
    res: ServerResponse,
    taken: Taken,
    log: FastifyBaseLogger,
    started: number,
  ): void {
    const route = ROUTE_OF[taken.endpoint];
    const { metrics } = this.options;
    const finished = (err?: Error): void => {
      res.off("finish", finished);
      res.off("error", finished);
      const responseTime = performance.now() - started;
      if (metrics) countRouteAnswer(metrics, "POST", route, res.statusCode, responseTime);
      const request = {
        method: "POST",
        url: taken.url,
        headers: req.headers,
        // Fastify's `request.host`: the Host header, or empty (an HTTP/1.0 request may send none).
        host: req.headers.host || "",
        ip: req.socket.remoteAddress,
        socket: req.socket,
      };
      logRequestEnd(log, err, request, res, responseTime);
    };
    res.on("finish", finished);
    res.on("error", finished);
  }
}

/**
 * The body's text, once `length` bytes arrived.
 * @throws Fastify's 400 errors for the same cases: `FST_ERR_CTP_INVALID_CONTENT_LENGTH` when the request ended with
 *   fewer bytes, the stream's own error (as 400) when the request failed (the client went away)
 */
function readBody(req: IncomingMessage, length: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      cleanup();
      if (received !== length) reject(contentLengthMismatch());
      else
        resolve(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks, received).toString("utf8"));
    };
    const onError = (err: Error & { statusCode?: number }): void => {
      cleanup();
      if (!(typeof err.statusCode === "number" && err.statusCode >= 400)) err.statusCode = 400;
      reject(err);
    };
    const cleanup = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

/** Fastify's error for a body shorter than its `content-length` (same status, code and message). */
function contentLengthMismatch(): Error {
  return Object.assign(new Error("Request body size did not match Content-Length"), {
    statusCode: 400,
    code: "FST_ERR_CTP_INVALID_CONTENT_LENGTH",
  });
}

/** Where the app puts its {@link ProxyLane} once built (the server is made before the app's routes). */
export interface LaneSlot {
  lane?: ProxyLane;
}

/**
 * Fastify's `serverFactory`: the HTTP server Fastify would make (same options: timeouts, keep-alive), whose requests
 * go to the slot's {@link ProxyLane} first and to Fastify when the lane does not take them.
 * @param slot - filled by the app once its lane is built; empty: every request goes to Fastify
 */
export function laneServerFactory(slot: LaneSlot): FastifyServerFactory {
  return (handler, options) => {
    const server: Server = createServer(options.http ?? {}, (req, res) => {
      if (slot.lane?.serve(req, res) !== true) handler(req, res);
    });
    const settings = options as typeof options & {
      keepAliveTimeout: number;
      requestTimeout: number;
      connectionTimeout: number;
      maxRequestsPerSocket: number;
    };
    server.keepAliveTimeout = settings.keepAliveTimeout;
    server.requestTimeout = settings.requestTimeout;
    server.setTimeout(settings.connectionTimeout);
    if (settings.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = settings.maxRequestsPerSocket;
    return server;
  };
}
