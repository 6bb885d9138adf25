/**
 * @module The dashboard's rollout table: `GET /api/dashboard/rollouts` filters and pages summary rows of every rollout
 * (state, split, run, step, data id, reward range, agent), newest first, with the total count of matches.
 */
import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import { parseOrThrow, RolloutStateSchema } from "../../protocol/index.js";
import type { RolloutIndex } from "../dashboard/rollout-index.js";
import { queryBool, queryInt, queryList } from "../query-params.js";

/** Options of {@link dashboardRolloutRoutes}. */
export interface DashboardRolloutRouteOptions {
  index: RolloutIndex;
}

/** A finite number query parameter; absent → undefined. */
const queryNumber = z
  .string()
  .regex(/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/, "Input should be a valid number")
  .transform(Number)
  .optional();

const ListQuerySchema = z.object({
  state: queryList(RolloutStateSchema),
  is_train: queryBool,
  run: z.string().min(1).optional(),
  step: z.string().regex(/^\d+$/, "Input should be a valid integer").transform(Number).optional(),
  data_id: z.string().min(1).optional(),
  reward_min: queryNumber,
  reward_max: queryNumber,
  agent: z.string().min(1).optional(),
  id: z.string().min(1).optional(),
  limit: queryInt(50, 1, 1000),
  offset: queryInt(0, 0, Number.MAX_SAFE_INTEGER),
});

/** Mounts `GET /api/dashboard/rollouts`. */
export const dashboardRolloutRoutes: FastifyPluginAsync<DashboardRolloutRouteOptions> = async (app, { index }) => {
  app.get("/api/dashboard/rollouts", async (request) => {
    const query = parseOrThrow(ListQuerySchema, request.query, "rollout table", ["query"]);
    await index.sync();
    const page = index.query({
      states: query.state,
      isTrain: query.is_train,
      run: query.run,
      step: query.step,
      dataId: query.data_id,
      rewardMin: query.reward_min,
      rewardMax: query.reward_max,
      agent: query.agent,
      idContains: query.id,
      limit: query.limit,
      offset: query.offset,
    });
    return { ...page, limit: query.limit, offset: query.offset };
  });
};
