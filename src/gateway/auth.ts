/**
 * @module API-key authentication of the gateway: `Authorization: Bearer KEY` or `x-api-key: KEY` on every route but
 * `/healthz`, compared in constant time. An empty key disables auth (the gateway warns loudly at start). With the
 * dashboard on, its login page and assets are public and a dashboard session cookie may read (GET/HEAD) any route.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { Unauthorized } from "../protocol/index.js";

/** Routes reachable without a key. */
const PUBLIC_PATHS = new Set(["/healthz"]);

/** What the dashboard adds to auth: its public paths (login page, assets) and its read-only sessions. */
export interface DashboardAuth {
  /** True for a path anyone may request (the login page and static assets hold no data). */
  isPublic(method: string, path: string): boolean;
  /** True when the request's `Cookie` header carries a live dashboard session. */
  hasSession(cookieHeader: string | undefined): boolean;
}

/** SHA-256 both sides so the compare is constant-time whatever the lengths. */
function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/** Reads the key a request presents: Bearer token first, then `x-api-key`; undefined when none. */
export function presentedKey(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (typeof authorization === "string") {
    const match = /^Bearer\s+(.+)$/i.exec(authorization.trim());
    if (match) return match[1];
  }
  const apiKey = request.headers["x-api-key"];
  return typeof apiKey === "string" ? apiKey : undefined;
}

/**
 * Builds an `onRequest` hook that rejects requests without the key.
 * @param key - the gateway key; empty disables auth
 * @param dashboard - the dashboard's public paths and sessions, when the dashboard is on
 * @throws {Unauthorized} from the hook, for a missing or wrong key (HTTP 401)
 */
export function makeAuthHook(key: string, dashboard?: DashboardAuth): (request: FastifyRequest) => Promise<void> {
  const expected = digest(key);
  return async (request) => {
    if (key === "") return;
    const path = request.url.split("?", 1)[0] ?? "";
    if (PUBLIC_PATHS.has(path) || dashboard?.isPublic(request.method, path)) return;
    const given = presentedKey(request);
    if (given !== undefined && timingSafeEqual(digest(given), expected)) return;
    const reads = request.method === "GET" || request.method === "HEAD";
    if (given === undefined && reads && dashboard?.hasSession(request.headers.cookie)) return;
    throw new Unauthorized();
  };
}
