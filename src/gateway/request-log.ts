/**
 * @module The gateway's request ids and its one log line per request (Fastify's `genReqId` and `logController`).
 */
import { randomUUID } from "node:crypto";
import { type FastifyReply, type FastifyRequest, LogController } from "fastify";

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
 * One log line per request, at its end: `request completed` (info) with the request (method, URL, host, remote
 * address), the status and `responseTime` (ms), or `request errored` (error). Fastify's `incoming request` line is
 * logged at debug only: at info it doubled the log's cost on the proxy's hot path and said nothing the end line does
 * not, but for a request that never ends (debug shows those).
 */
export class GatewayLogController extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (DEBUG_LEVELS.has(request.log.level)) request.log.debug({ req: request }, "incoming request");
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error)
      reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, "request errored");
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, "request completed");
  }
}
