/**
 * @module API-key authentication of the gateway: `Authorization: Bearer KEY` or `x-api-key: KEY` on every route but
 * `/healthz`, compared in constant time. An empty key disables auth (the gateway warns loudly at start).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { Unauthorized } from "../protocol/index.js";

/** Routes reachable without a key. */
const PUBLIC_PATHS = new Set(["/healthz"]);

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
 * @throws {Unauthorized} from the hook, for a missing or wrong key (HTTP 401)
 */
export function makeAuthHook(key: string): (request: FastifyRequest) => Promise<void> {
  const expected = digest(key);
  return async (request) => {
    if (key === "") return;
    const path = request.url.split("?", 1)[0] ?? "";
    if (PUBLIC_PATHS.has(path)) return;
    const given = presentedKey(request);
    if (given === undefined || !timingSafeEqual(digest(given), expected)) throw new Unauthorized();
  };
}
