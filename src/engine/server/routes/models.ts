/**
 * @module `GET /v1/models`: the one served model, in vLLM's model-card shape (`max_model_len` = context length).
 * @see vLLM `vllm/entrypoints/openai/engine/protocol.py` (`ModelCard`, `ModelList`)
 */
import type { FastifyPluginAsync } from "fastify";
import { POLICY_VERSION_HEADER, type ServerContext } from "../context.js";

/** Route plugin of `GET /v1/models`. */
export function modelRoutes(ctx: ServerContext): FastifyPluginAsync {
  return async (app) => {
    app.get("/v1/models", async (_request, reply) => {
      void reply.header(POLICY_VERSION_HEADER, String(ctx.engine.policyVersion));
      return {
        object: "list",
        data: [
          {
            id: ctx.modelName,
            object: "model",
            created: ctx.startedS,
            owned_by: "arclight",
            root: ctx.modelName,
            parent: null,
            max_model_len: ctx.engine.contextLength,
            permission: [],
          },
        ],
      };
    });
  };
}
