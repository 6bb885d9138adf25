/** @module The API key a request presents (Bearer or `x-api-key`) and a constant-time comparison. */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/** SHA-256 both sides so the compare is constant-time whatever the lengths. */
function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/** @returns the Bearer token, else `x-api-key`, else undefined */
export function presentedKeyOf(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headers.authorization;
  if (typeof authorization === "string") {
    const match = /^Bearer\s+(.+)$/i.exec(authorization.trim());
    if (match) return match[1];
  }
  const apiKey = headers["x-api-key"];
  return typeof apiKey === "string" ? apiKey : undefined;
}

/** A constant-time matcher for one expected key. */
export function keyMatcher(expected: string): (given: string) => boolean {
  const want = digest(expected);
  return (given) => timingSafeEqual(digest(given), want);
}
