/**
 * @module The gateway's request ids and its one log line per request (Fastify's `genReqId` and `logController`).
 */
import { randomUUID } from "node:crypto";
import { type FastifyReply, type FastifyRequest, LogController } from "fastify";
import { quoteStart } from "../protocol/index.js";

/**
 * The id of a request (Fastify's `genReqId`): the caller's `x-request-id` when it is 1–128 characters of
 * `[A-Za-z0-9_.:-]`, else a random UUID.
 * @param header - the request's `x-request-id` header as Node gives it
 */
export function requestId(header: string | string[] | undefined): string {
  return typeof header === "string" && /^[\w.:-]{1,128}$/.test(header) ? header : randomUUID();
}

/** Pino levels at which debug lines are written. */
const DEBUG_LEVELS = new Set(["debug", "trace"]);

/**
 * One log line per request, at its end: `request completed` (info) with the request, status and `responseTime` (ms),
 * or `request errored`. Fastify's `incoming request` line is at debug: the end line says the same.
 */
export class GatewayLogController extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (DEBUG_LEVELS.has(request.log.level)) request.log.debug({ req: request }, "incoming request");
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const responseTime = reply.elapsedTime;
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime }, "request errored");
    else reply.log.info({ req: request, res: reply, responseTime }, "request completed");
  }
}

/** The fields of a request that its log line shows ({@link requestForLog}); a Fastify request has them all. */
export interface LoggedRequest {
  method: string;
  url: string;
  headers: FastifyRequest["headers"];
  host: string;
  ip: string | undefined;
  socket: FastifyRequest["socket"] | undefined;
}

/** Longest request URL a log line holds as it is (a URL can be as long as Node's header limit, 16 KiB). */
export const MAX_LOGGED_URL_CHARS = 1000;

/**
 * How a request appears in a log line (pino's `req` serializer, set on the gateway's logger): Fastify's fields, with
 * a URL over {@link MAX_LOGGED_URL_CHARS} characters cut to its start and its length
 * (`/api/rollouts/yyy… (15009 characters)`).
 * @param request - the request being logged
 */
export function requestForLog(request: LoggedRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: quoteStart(request.url, MAX_LOGGED_URL_CHARS),
    version: request.headers["accept-version"],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
