/**
 * @module The engine server's model-name check, as vLLM's `_check_model`: a completion may omit `model` (the served
 * model answers) or name the served model; any other name is 404
 * `{"error": {"message": "The model `NAME` does not exist.", "type": "NotFoundError", "param": "model", "code": 404}}`.
 * @see vLLM `OpenAIServing._check_model` (`vllm/entrypoints/openai/engine/serving.py`)
 */
import { ArclightError } from "../../protocol/errors.js";

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
 * Checks a request's `model` against the served name.
 * @param served - the model name this server serves
 * @param requested - the request's `model`; absent means the served model
 * @throws {ModelNotServed} when `requested` is another name
 */
export function checkModel(served: string, requested: string | undefined): void {
  if (requested !== undefined && requested !== served) throw new ModelNotServed(requested);
}
