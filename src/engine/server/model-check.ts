/**
 * @module The engine server's model-name check, as vLLM's `_check_model`: a completion may omit `model` (the base
 * model answers), name the base model, or name an adapter served beside it (that adapter answers, as vLLM answers a
 * loaded LoRA adapter's name); any other name is 404
 * `{"error": {"message": "The model `NAME` does not exist.", "type": "NotFoundError", "param": "model", "code": 404}}`.
 * @see vLLM `OpenAIServing._check_model` (`vllm/entrypoints/openai/engine/serving.py`)
 */
import { ArclightError } from "../../protocol/errors.js";
import type { ServedModel, ServerContext } from "./context.js";

/** The wire code of {@link ModelNotServed}; its error body names `param: "model"`. */
export const MODEL_NOT_SERVED = "model_not_found";

/** A request named a model this server does not serve (HTTP 404, vLLM's message). */
export class ModelNotServed extends ArclightError {
  /** @param model - the name the request gave */
  constructor(model: string) {
    super(MODEL_NOT_SERVED, 404, `The model \`${model}\` does not exist.`);
  }
}

/**
 * The model a request's `model` names.
 * @param ctx - the server's base model and adapters
 * @param requested - the request's `model`; absent means the base model
 * @returns the model's name and the engine that answers it
 * @throws {ModelNotServed} when `requested` is neither the base model nor an adapter
 */
export function servedModel(
  ctx: Pick<ServerContext, "modelName" | "engine" | "adapters">,
  requested: string | undefined,
): ServedModel {
  if (requested === undefined || requested === ctx.modelName) return { modelName: ctx.modelName, engine: ctx.engine };
  const engine = ctx.adapters.get(requested);
  if (engine === undefined) throw new ModelNotServed(requested);
  return { modelName: requested, engine };
}
