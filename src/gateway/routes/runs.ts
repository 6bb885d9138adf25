/**
 * @module Training-run routes of the dashboard: a trainer creates its run (`PUT /api/runs/{name}` with its config) and
 * posts each step's metrics (`POST /api/runs/{name}/steps`); the dashboard lists runs and reads one with its metrics.
 */
import type { FastifyPluginAsync } from "fastify";
import { NotFound, parseOrThrow, RunNameSchema, RunPutSchema, RunStepsPostSchema } from "../../protocol/index.js";
import type { RunRegistry } from "../dashboard/run-registry.js";

/** Options of {@link runRoutes}. */
export interface RunRouteOptions {
  registry: RunRegistry;
}

/** Path params of the routes under `/api/runs/:name`. */
interface RunParams {
  name: string;
}

/** Mounts the `/api/runs` routes. */
export const runRoutes: FastifyPluginAsync<RunRouteOptions> = async (app, { registry }) => {
  app.get("/api/runs", async () => ({ runs: registry.list() }));

  app.put<{ Params: RunParams }>("/api/runs/:name", async (request) => {
    const name = parseOrThrow(RunNameSchema, request.params.name, "run name", ["path", "name"]);
    const put = parseOrThrow(RunPutSchema, request.body ?? {}, "run", ["body"]);
    const run = registry.upsert(name, put);
    request.log.info({ run: name }, "registered run");
    return run;
  });

  app.post<{ Params: RunParams }>("/api/runs/:name/steps", async (request, reply) => {
    const steps = parseOrThrow(RunStepsPostSchema, request.body, "run steps", ["body"]);
    const run = registry.appendSteps(request.params.name, steps);
    return reply.status(201).send(run);
  });

  app.get<{ Params: RunParams }>("/api/runs/:name", async (request) => {
    const run = registry.get(request.params.name);
    if (!run) throw new NotFound(`Run ${request.params.name} not found`);
    return run;
  });
};
