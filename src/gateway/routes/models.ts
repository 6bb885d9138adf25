/** @module Model endpoint routes: register (upsert by model + endpoint), list and remove the servers of a model. */
import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import { ModelSchema, parseOrThrow } from "../../protocol/index.js";
import type { GatewayRouteOptions } from "../route-options.js";

const ModelListSchema = z.array(ModelSchema);
const ModelQuerySchema = z.object({ model: z.string().min(1).optional() });

/**
 * Mounts `POST /api/models` (list of Model → 201 list, upsert by (model, endpoint)), `GET /api/models[?model=]`
 * (beyond AGL) and `DELETE /api/models[?model=]` → `{"status":"ok"}`.
 */
export const modelRoutes: FastifyPluginAsync<GatewayRouteOptions> = async (app, { store }) => {
  app.post("/api/models", async (request, reply) => {
    const models = parseOrThrow(ModelListSchema, request.body, "models", ["body"]);
    const stored = await store.upsertModels(models);
    request.log.info({ count: stored.length }, "registered model endpoints");
    return reply.status(201).send(stored);
  });

  app.get("/api/models", async (request) => {
    const { model } = parseOrThrow(ModelQuerySchema, request.query, "models query", ["query"]);
    return store.listModels(model);
  });

  app.delete("/api/models", async (request) => {
    const { model } = parseOrThrow(ModelQuerySchema, request.query, "models query", ["query"]);
    const removed = await store.deleteModels(model);
    request.log.info({ removed, model }, "removed model endpoints");
    return { status: "ok" };
  });
};
