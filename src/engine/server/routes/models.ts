/**
 * @module `GET /v1/models`: the base model, then one card per adapter served beside it, in vLLM's model-card shapes.
 * The base card has `max_model_len` = context length and `parent: null`. An adapter's card is vLLM's LoRA card: `id`
 * = its name, `parent` = the base model's name, `max_model_len: null`; vLLM's `root` is the adapter's folder, and
 * here, where an adapter is an engine with no folder, `root` is its name (as the base card's `root` is the base name).
 * @see vLLM `vllm/entrypoints/openai/engine/protocol.py` (`ModelCard`, `ModelList`)
 * @see vLLM `OpenAIServingModels.show_available_models` (`vllm/entrypoints/openai/models/serving.py`: `lora_cards`)
 */
import type { FastifyPluginAsync } from "fastify";
import { POLICY_VERSION_HEADER, type ServerContext } from "../context.js";

/** Route plugin of `GET /v1/models`. */
export function modelRoutes(ctx: ServerContext): FastifyPluginAsync {
  return async (app) => {
    app.get("/v1/models", async (_request, reply) => {
      void reply.header(POLICY_VERSION_HEADER, String(ctx.engine.policyVersion));
      const card = (id: string, parent: string | null, maxModelLen: number | null) => ({
        id,
        object: "model",
        created: ctx.startedS,
        owned_by: "arclight",
        root: id,
        parent,
        max_model_len: maxModelLen,
        permission: [],
      });
      const adapters = [...ctx.adapters.keys()].map((name) => card(name, ctx.modelName, null));
      return { object: "list", data: [card(ctx.modelName, null, ctx.engine.contextLength), ...adapters] };
    });
  };
}
