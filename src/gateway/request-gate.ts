/**
 * @module The gateway's first `onRequest` hook, shared by the app and the proxy test harness: sets `x-request-id` on
 * the answer, finds the caller (`auth.ts`), refuses a path whose named parameter is empty, and refuses what the
 * caller's credential does not allow (`access.ts`).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { pathForDetail } from "../http/error-handler.js";
import { NotFound } from "../protocol/index.js";
import { checkAccess } from "./access.js";
import { type DashboardAuth, makeAuthCheck } from "./auth.js";

/**
 * Builds the hook. One synchronous hook rather than three async ones: every request pays it.
 * @param key - the gateway's admin key; empty disables auth
 * @param dashboard - the dashboard's public paths and sessions, when the dashboard is on
 * @returns a callback-style `onRequest` hook; it passes `Unauthorized` (401), `NotFound` (404: an empty named path
 *   parameter, as in `/api/rollouts/` or `/api/rollouts//events`, which the router would otherwise take for the id
 *   "") or `Forbidden` (403) to Fastify's error handler
 */
export function requestGate(
  key: string,
  dashboard?: DashboardAuth,
): (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void {
  const authenticate = makeAuthCheck(key, dashboard);
  return (request, reply, done) => {
    reply.header("x-request-id", request.id);
    try {
      authenticate(request);
      refuseEmptyParams(request);
      checkAccess(request);
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  };
}

/**
 * @throws {NotFound} a named path parameter (not the `*` wildcard, which may be empty) is the empty string
 */
function refuseEmptyParams(request: FastifyRequest): void {
  const params = request.params as Record<string, string> | undefined;
  for (const name in params) {
    if (params[name] === "" && name !== "*") {
      throw new NotFound(`Route ${request.method} ${pathForDetail(request.url)} not found (empty :${name})`);
    }
  }
}
