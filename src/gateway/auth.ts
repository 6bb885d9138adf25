/**
 * @module Authentication of the gateway: who a request comes from. `Authorization: Bearer KEY` or `x-api-key: KEY` on
 * every route but `/healthz` presents either the admin key (compared in constant time) or an agent token
 * (`protocol/agent-token.ts`, signed under the admin key). An empty key disables auth (the gateway warns loudly at
 * start). With the dashboard on, its login page and assets are public and a dashboard session cookie may read
 * (GET/HEAD) any route. What each caller may do is decided by `access.ts`.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { FastifyRequest } from "fastify";
import { keyMatcher, presentedKeyOf } from "../http/api-key.js";
import { type AgentTokenClaims, AgentTokenVerifier, isAgentToken } from "../protocol/agent-token.js";
import { Unauthorized } from "../protocol/index.js";

/** Routes reachable without a key. */
const PUBLIC_PATHS = new Set(["/healthz", "/livez"]);

/** What the dashboard adds to auth: its public paths (login page, assets) and its read-only sessions. */
export interface DashboardAuth {
  /** True for a path anyone may request (the login page and static assets hold no data). */
  isPublic(method: string, path: string): boolean;
  /** True when the request's `Cookie` header carries a live dashboard session. */
  hasSession(cookieHeader: string | undefined): boolean;
  /** True for a POST that only reads (its query would not fit in a URL), which a session may send like a GET. */
  isReadingPost(path: string): boolean;
}

/**
 * Who a request comes from: the admin key (or an open gateway), an agent token with its claims, a dashboard session
 * (read-only) or nobody (a public path).
 */
export type Principal =
  | { kind: "admin" }
  | { kind: "agent"; claims: AgentTokenClaims }
  | { kind: "dashboard" }
  | { kind: "public" };

const principals = new WeakMap<FastifyRequest, Principal>();

/**
 * The principal the auth hook found for a request.
 * @returns `admin` when the hook did not run (an app built without auth)
 */
export function principalOf(request: FastifyRequest): Principal {
  return principals.get(request) ?? { kind: "admin" };
}

/** @returns the claims of the agent token a request presented, or undefined for any other caller */
export function agentClaimsOf(request: FastifyRequest): AgentTokenClaims | undefined {
  const principal = principalOf(request);
  return principal.kind === "agent" ? principal.claims : undefined;
}

/** The principal of a presented key or token. @throws {Unauthorized} wrong key, forged or expired token */
function principalOfKey(tokens: AgentTokenVerifier, isAdminKey: (given: string) => boolean, given: string): Principal {
  if (isAgentToken(given)) {
    const verdict = tokens.verify(given, Date.now() / 1000);
    if ("claims" in verdict) return { kind: "agent", claims: verdict.claims };
    throw new Unauthorized(verdict.refused === "expired" ? "Agent token expired" : "Invalid agent token");
  }
  if (isAdminKey(given)) return { kind: "admin" };
  throw new Unauthorized();
}

const ADMIN: Principal = Object.freeze({ kind: "admin" });
const PUBLIC: Principal = Object.freeze({ kind: "public" });
const DASHBOARD: Principal = Object.freeze({ kind: "dashboard" });

/**
 * Builds the check of a request's credential alone (no public paths, no dashboard sessions): the principal of the key
 * or token its headers present; {@link makeAuthCheck} builds on it.
 * @param key - the gateway's admin key; empty disables auth (every request is admin)
 * @returns a synchronous check: the principal, or undefined when the headers present no key
 * @throws {Unauthorized} from the check, for a wrong key or a forged or expired agent token (HTTP 401)
 */
function makeCredentialCheck(key: string): (headers: IncomingHttpHeaders) => Principal | undefined {
  if (key === "") return () => ADMIN;
  const isAdminKey = keyMatcher(key);
  const tokens = new AgentTokenVerifier(key);
  return (headers) => {
    const given = presentedKeyOf(headers);
    return given === undefined ? undefined : principalOfKey(tokens, isAdminKey, given);
  };
}

/**
 * Builds the check that finds each request's {@link Principal} and rejects requests without a valid key; run it
 * first thing for every request (`request-gate.ts`). Agent tokens are verified once and then
 * remembered (`AgentTokenVerifier`); the admin key is compared in constant time on every call.
 * @param key - the gateway's admin key; empty disables auth (every request is admin)
 * @param dashboard - the dashboard's public paths and sessions, when the dashboard is on
 * @returns a synchronous check
 * @throws {Unauthorized} from the check, for a missing or wrong key or a forged or expired agent token (HTTP 401)
 */
export function makeAuthCheck(key: string, dashboard?: DashboardAuth): (request: FastifyRequest) => void {
  if (key === "") return (request) => void principals.set(request, ADMIN);
  const credential = makeCredentialCheck(key);
  return (request) => {
    const url = request.url;
    const query = url.indexOf("?");
    const path = query === -1 ? url : url.slice(0, query);
    if (PUBLIC_PATHS.has(path) || dashboard?.isPublic(request.method, path)) {
      principals.set(request, PUBLIC);
      return;
    }
    const principal = credential(request.headers);
    if (principal !== undefined) {
      principals.set(request, principal);
      return;
    }
    const reads =
      request.method === "GET" ||
      request.method === "HEAD" ||
      (request.method === "POST" && dashboard?.isReadingPost(path) === true);
    if (reads && dashboard?.hasSession(request.headers.cookie)) {
      principals.set(request, DASHBOARD);
      return;
    }
    throw new Unauthorized();
  };
}
