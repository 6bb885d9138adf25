/**
 * @module The gateway's first `onRequest` hook, shared by the app and the proxy test harness: sets `x-request-id` on
 * the answer, finds the caller (`auth.ts`) and refuses what its credential does not allow (`access.ts`).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { checkAccess } from "./access.js";
import { type DashboardAuth, makeAuthCheck } from "./auth.js";

/**
 * Builds the hook. One synchronous hook rather than three async ones: every request pays it.
 * @param key - the gateway's admin key; empty disables auth
 * @param dashboard - the dashboard's public paths and sessions, when the dashboard is on
 * @returns a callback-style `onRequest` hook; it passes `Unauthorized` (401) or `Forbidden` (403) to Fastify's error
 *   handler
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
      checkAccess(request);
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  };
}
