/**
 * @module The engine server's request guard (an `onRequest` hook): every POST must declare `application/json` (415
 * otherwise), so a browser page cannot reach it with a "simple" cross-origin request (`text/plain`, a form), which
 * needs no CORS preflight; and the admin routes (`/v1/load_weights`, `/pause`, `/resume`) need the admin key, as
 * Bearer token or `x-api-key` (401 otherwise). Generation routes take no key: the gateway's proxy calls them.
 */
import type { FastifyRequest } from "fastify";
import { keyMatcher, presentedKeyOf } from "../../http/api-key.js";
import { ArclightError, Unauthorized } from "../../protocol/errors.js";

/** Routes that change what the server serves or whether it serves. */
export const ADMIN_PATHS: ReadonlySet<string> = new Set(["/v1/load_weights", "/pause", "/resume"]);

/** A POST whose content type is not JSON (HTTP 415). */
export class UnsupportedMediaType extends ArclightError {
  constructor(contentType: string | undefined) {
    super(
      "unsupported_media_type",
      415,
      `Content-Type ${contentType === undefined ? "(none)" : JSON.stringify(contentType)} is not accepted: POST bodies must be application/json`,
    );
  }
}

/** @returns true for `application/json`, with or without parameters (`; charset=utf-8`) */
function isJson(contentType: string | undefined): boolean {
  return contentType?.split(";", 1)[0]?.trim().toLowerCase() === "application/json";
}

/**
 * Builds the guard.
 * @param key - the admin key; empty: the admin routes are open (the CLI warns)
 * @returns the `onRequest` hook
 * @throws {UnsupportedMediaType} from the hook, for a POST that is not JSON (HTTP 415)
 * @throws {Unauthorized} from the hook, for an admin route without the key (HTTP 401)
 */
export function makeRequestGuard(key: string): (request: FastifyRequest) => Promise<void> {
  const isAdminKey = keyMatcher(key);
  return async (request) => {
    if (request.method === "POST" && !isJson(request.headers["content-type"])) {
      throw new UnsupportedMediaType(request.headers["content-type"]);
    }
    if (key === "" || !ADMIN_PATHS.has(request.url.split("?", 1)[0] ?? "")) return;
    const given = presentedKeyOf(request.headers);
    if (given === undefined || !isAdminKey(given)) throw new Unauthorized("Missing or invalid admin key");
  };
}
