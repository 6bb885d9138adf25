/**
 * @module What each caller may do: the admin key anything, a dashboard session reads (auth.ts already limits it to
 * GET/HEAD), and an agent token only its own attempt's routes:
 * - the proxy (`/proxy/rollout/{rid}/attempt/{aid}/mode/{mode}/…`) for its own rollout, attempt and mode;
 * - `POST /api/rollouts/{rid}/attempt/{aid}/events` for its own rollout and attempt;
 * - `GET /api/rollouts/{rid}`, `GET /api/rollouts/{rid}/events` and `PATCH /api/rollouts/{rid}` of its own rollout
 *   (the PATCH route then checks the attempt: `agent-patch.ts`);
 * - `POST /v1/traces`, whose ingest keeps only the token's own rollout and attempt.
 * Everything else (rollout create, list, delete, models, pause/resume, metrics, runs, dashboard data) answers 403.
 * Unknown paths are left to the 404 handler.
 */
import type { FastifyRequest } from "fastify";
import type { AgentTokenClaims } from "../protocol/agent-token.js";
import { Forbidden } from "../protocol/index.js";
import { principalOf } from "./auth.js";

/** The proxy routes' common prefix, as Fastify names the route. */
const PROXY_PREFIX = "/proxy/rollout/:rid/attempt/:aid/mode/:mode/";

/** Routes an agent token may call on its own rollout (method + Fastify route pattern, rollout id in `:id`). */
const OWN_ROLLOUT_ROUTES = new Set([
  "GET /api/rollouts/:id",
  "GET /api/rollouts/:id/events",
  "PATCH /api/rollouts/:id",
  "POST /api/rollouts/:id/attempt/:aid/events",
]);

type Params = Record<string, string | undefined>;

/** @returns why the agent may not make this call, or undefined when it may */
function agentRefusal(claims: AgentTokenClaims, method: string, route: string, params: Params): string | undefined {
  const verb = method === "HEAD" ? "GET" : method;
  // Built only for a refusal: every agent call passes here, and most are allowed.
  const own = (): string => `rollout ${claims.rollout_id} attempt ${claims.attempt_id} (${claims.mode})`;
  if (route.startsWith(PROXY_PREFIX)) {
    if (params.rid === claims.rollout_id && params.aid === claims.attempt_id && params.mode === claims.mode) return;
    return `This agent token is for ${own()}; it may not call the proxy of rollout ${params.rid} attempt ${params.aid} (${params.mode})`;
  }
  if (verb === "POST" && route === "/v1/traces") return;
  if (OWN_ROLLOUT_ROUTES.has(`${verb} ${route}`)) {
    if (params.id !== claims.rollout_id)
      return `This agent token is for ${own()}; it may not touch rollout ${params.id}`;
    if (params.aid !== undefined && params.aid !== claims.attempt_id) {
      return `This agent token is for ${own()}; it may not write to attempt ${params.aid}`;
    }
    return;
  }
  return `${verb} ${route} needs the admin key; an agent token may only use its own attempt's proxy, events and rollout`;
}

/**
 * Refuses what the caller's credential does not allow; run it after the auth check (`auth.ts`), in `onRequest`.
 * @throws {Forbidden} an agent token outside its own attempt's routes (HTTP 403)
 */
export function checkAccess(request: FastifyRequest): void {
  const principal = principalOf(request);
  if (principal.kind !== "agent") return;
  const route = request.routeOptions.url;
  if (route === undefined) return;
  const refusal = agentRefusal(principal.claims, request.method, route, request.params as Params);
  if (refusal !== undefined) throw new Forbidden(refusal);
}
