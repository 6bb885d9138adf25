/**
 * @module Rollout routes (Agent Lightning v1.0): create (idempotent by `rollout_id`), list with filters and paging,
 * the terminal cursor, one rollout with its attempts, status patches (an agent token's pinned to its current attempt),
 * delete.
 */
import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import {
  parseOrThrow,
  RolloutCreateSchema,
  RolloutNotFound,
  RolloutPatchSchema,
  RolloutStateSchema,
} from "../../protocol/index.js";
import { pinAgentPatch } from "../agent-patch.js";
import { agentClaimsOf } from "../auth.js";
import { queryBool, queryInt, queryList } from "../query-params.js";
import type { GatewayRouteOptions } from "../route-options.js";

/** Largest page any list route returns. */
const MAX_PAGE = 10_000;

const RolloutCreateListSchema = z.array(RolloutCreateSchema);
const RolloutListQuerySchema = z.object({
  state_in: queryList(RolloutStateSchema),
  is_train: queryBool,
  limit: queryInt(500, 1, MAX_PAGE),
  offset: queryInt(0, 0, Number.MAX_SAFE_INTEGER),
});
const TerminalQuerySchema = z.object({
  after: queryInt(0, 0, Number.MAX_SAFE_INTEGER),
  limit: queryInt(1000, 1, MAX_PAGE),
});

/** Path params of the routes under `/api/rollouts/:id`. */
interface RolloutParams {
  id: string;
}

/** Mounts every `/api/rollouts` route except events (see `events.ts`). */
export const rolloutRoutes: FastifyPluginAsync<GatewayRouteOptions> = async (app, { store }) => {
  app.post("/api/rollouts", async (request, reply) => {
    const creates = parseOrThrow(RolloutCreateListSchema, request.body, "rollout create", ["body"]);
    const rollouts = await store.createRollouts(creates);
    request.log.info({ count: rollouts.length }, "created rollouts");
    return reply.status(201).send(rollouts);
  });

  app.get("/api/rollouts", async (request) => {
    const query = parseOrThrow(RolloutListQuerySchema, request.query, "rollout list", ["query"]);
    return store.listRollouts({
      states: query.state_in,
      isTrain: query.is_train,
      limit: query.limit,
      offset: query.offset,
    });
  });

  app.get("/api/rollouts/terminal", async (request) => {
    const { after, limit } = parseOrThrow(TerminalQuerySchema, request.query, "terminal cursor", ["query"]);
    return store.listTerminal(after, limit);
  });

  app.get<{ Params: RolloutParams }>("/api/rollouts/:id", async (request) => {
    const rollout = await store.getRollout(request.params.id);
    if (!rollout) throw new RolloutNotFound(request.params.id);
    return { rollout, attempts: await store.listAttempts(request.params.id) };
  });

  app.patch<{ Params: RolloutParams }>("/api/rollouts/:id", async (request) => {
    let patch = parseOrThrow(RolloutPatchSchema, request.body, "rollout patch", ["body"]);
    const agent = agentClaimsOf(request);
    if (agent) patch = await pinAgentPatch(store, agent, request.params.id, patch);
    const rollout = await store.patchRollout(request.params.id, patch);
    request.log.info({ state: rollout.status.state, attemptId: rollout.status.last_attempt_id }, "patched rollout");
    return rollout;
  });

  app.delete<{ Params: RolloutParams }>("/api/rollouts/:id", async (request, reply) => {
    const existed = await store.deleteRollout(request.params.id);
    if (existed) request.log.info("deleted rollout");
    return reply.status(204).send();
  });
};
