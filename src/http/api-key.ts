/**
 * @module The API key a request presents (`Authorization: Bearer KEY` or `x-api-key: KEY`) and a constant-time
 * comparison with the expected key; shared by the gateway and the engine server.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/** SHA-256 both sides so the compare is constant-time whatever the lengths. */
function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/**
 * Reads the key a request presents.
 * @param headers - the request headers
 * @returns the Bearer token first, then `x-api-key`; undefined when neither is there
 */
export function presentedKeyOf(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  if (typeof authorization === "string") {
    const match = /^Bearer\s+(.+)$/i.exec(authorization.trim());
    if (match) return match[1];
  }
  const apiKey = headers["x-api-key"];
  return typeof apiKey === "string" ? apiKey : undefined;
}

/**
 * A constant-time matcher for one expected key.
 * @param expected - the key to match
 * @returns a function telling whether a presented key equals `expected`
 */
export function keyMatcher(expected: string): (given: string) => boolean {
  const want = digest(expected);
  return (given) => timingSafeEqual(digest(given), want);
}
