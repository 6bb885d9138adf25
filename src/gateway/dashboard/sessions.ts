/**
 * @module Dashboard login sessions: a key entered once becomes a random session token, sent back as an httpOnly,
 * SameSite=Strict cookie. Sessions are read-only (GET/HEAD) and live in memory, so a gateway restart logs users out.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** Name of the session cookie. */
export const SESSION_COOKIE = "arclight_session";

/** Default session lifetime: 12 hours. */
export const DEFAULT_SESSION_TTL_MS = 12 * 3600 * 1000;

/** SHA-256 both sides so the compare is constant-time whatever the lengths. */
function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/** True when `given` equals the non-empty `expected`, compared in constant time. */
function keyMatches(given: string, expected: string): boolean {
  return expected !== "" && timingSafeEqual(digest(given), digest(expected));
}

/**
 * Reads one cookie from a `Cookie` header.
 * @param header - the raw header (`a=1; b=2`), or undefined
 * @param name - the cookie name
 * @returns the value, or undefined when the cookie is absent
 */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Keys that open a session, and how long one lasts. */
export interface SessionOptions {
  /** The gateway key; empty means the gateway runs without auth. */
  gatewayKey: string;
  /** A read-only dashboard key; empty: only the gateway key logs in. */
  dashboardKey: string;
  /** Session lifetime in ms; default {@link DEFAULT_SESSION_TTL_MS}. */
  ttlMs?: number;
}

/** The open dashboard sessions of one gateway. */
export class DashboardSessions {
  private readonly options: SessionOptions;
  private readonly ttlMs: number;
  /** token → expiry (epoch ms). */
  private readonly expiries = new Map<string, number>();

  /** @param options - the keys that log in and the session lifetime */
  constructor(options: SessionOptions) {
    this.options = options;
    this.ttlMs = options.ttlMs ?? DEFAULT_SESSION_TTL_MS;
  }

  /** True when the gateway runs without a key: everything is open, no login needed. */
  get open(): boolean {
    return this.options.gatewayKey === "";
  }

  /** Session lifetime in seconds (the cookie's `Max-Age`). */
  get maxAgeS(): number {
    return Math.floor(this.ttlMs / 1000);
  }

  /**
   * Opens a session for a key.
   * @param key - what the user typed
   * @returns a new session token, or undefined when the key is neither the gateway key nor the dashboard key
   */
  login(key: string, nowMs = Date.now()): string | undefined {
    if (!keyMatches(key, this.options.gatewayKey) && !keyMatches(key, this.options.dashboardKey)) return undefined;
    this.dropExpired(nowMs);
    const token = randomBytes(32).toString("base64url");
    this.expiries.set(token, nowMs + this.ttlMs);
    return token;
  }

  /**
   * Checks a `Cookie` header for a live session.
   * @param cookieHeader - the request's raw `Cookie` header
   * @returns true when it carries an unexpired session token
   */
  isValid(cookieHeader: string | undefined, nowMs = Date.now()): boolean {
    const token = readCookie(cookieHeader, SESSION_COOKIE);
    if (token === undefined) return false;
    const expiry = this.expiries.get(token);
    if (expiry === undefined) return false;
    if (expiry > nowMs) return true;
    this.expiries.delete(token);
    return false;
  }

  /** Ends the session a `Cookie` header carries, if any. */
  logout(cookieHeader: string | undefined): void {
    const token = readCookie(cookieHeader, SESSION_COOKIE);
    if (token !== undefined) this.expiries.delete(token);
  }

  /** Forgets expired sessions, so the map holds only live ones. */
  private dropExpired(nowMs: number): void {
    for (const [token, expiry] of this.expiries) if (expiry <= nowMs) this.expiries.delete(token);
  }
}
