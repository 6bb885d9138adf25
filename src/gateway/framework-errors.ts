/**
 * @module The gateway's answer to a request Fastify refuses before routing (its `frameworkErrors` option), logged
 * and counted like every other answer.
 */
import type { FastifyReply, FastifyServerOptions, LogController } from "fastify";
import { errorHandler } from "../http/error-handler.js";
import { countAnswer, type GatewayMetrics } from "./metrics.js";

/**
 * Builds Fastify's `frameworkErrors` callback: a malformed URL (`/api/rollouts/%zz`, 400 `fst_err_bad_url`) or an
 * over-long path segment (414 `fst_err_max_param_length`) gets the `{detail, code}` answer and `x-request-id` of
 * every other error, not Fastify's own body. Fastify runs no `onResponse` hook and writes no end-of-request line
 * for such a request, so when its answer is sent this counts it in `/metrics` (route `unmatched`) and passes it
 * to the log controller's `requestCompleted`, as Fastify does for a routed request.
 * @param logController - the controller given to Fastify as `logController`
 * @param metrics - the app's metrics
 * @returns the `frameworkErrors` option
 */
export function frameworkErrorHandler(
  logController: LogController,
  metrics: GatewayMetrics,
): NonNullable<FastifyServerOptions["frameworkErrors"]> {
  return (err, request, reply) => {
    endOfAnswer(reply, (error) => {
      countAnswer(metrics, request, reply);
      logController.requestCompleted(error, request, reply);
    });
    void reply.header("x-request-id", request.id);
    errorHandler(err, request, reply);
  };
}

/**
 * Calls `onEnd` once the answer is sent (or its socket failed), with the reply's `elapsedTime` running from now.
 * Fastify starts a reply's clock only for a routed request, so a refused one would report 0 ms: this reply gets its
 * own clock, read the same way (`reply.elapsedTime`, ms).
 */
function endOfAnswer(reply: FastifyReply, onEnd: (error: Error | null) => void): void {
  const startMs = performance.now();
  let endMs: number | undefined;
  Object.defineProperty(reply, "elapsedTime", { get: () => (endMs ?? performance.now()) - startMs });
  const raw = reply.raw;
  const finished = (error?: Error) => {
    endMs = performance.now();
    raw.off("finish", finished);
    raw.off("error", finished);
    onEnd(error ?? null);
  };
  raw.on("finish", finished);
  raw.on("error", finished);
}
