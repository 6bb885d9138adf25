/**
 * @module The proxy's answer to `GET …/openai/v1/models`: the models an agent may name, in OpenAI's list shape. Some
 * agent frameworks list models at start-up and give up when the call fails.
 * @see https://platform.openai.com/docs/api-reference/models/list
 */
import type { Store } from "../../store/store.js";

/** One entry of an OpenAI model list. */
export interface OpenAiModel {
  id: string;
  object: "model";
  /** Epoch seconds. */
  created: number;
  owned_by: string;
}

/** The body of an OpenAI model list. */
export interface OpenAiModelList {
  object: "list";
  data: OpenAiModel[];
}

/**
 * Lists the models a proxied call can reach: the configured model name alone when one is set (the gateway sends
 * every call upstream under that name, whatever the agent asks for), else every model with a registered endpoint.
 * @param store - where endpoints are registered (`POST /api/models`)
 * @param modelName - the gateway's `--model-name`; "" when unset
 * @param createdSeconds - epoch seconds reported as each model's `created`
 * @returns an OpenAI `{object: "list", data}` body, models in name order, each listed once
 */
export async function listProxyModels(
  store: Store,
  modelName: string,
  createdSeconds: number,
): Promise<OpenAiModelList> {
  const names = modelName !== "" ? [modelName] : [...new Set((await store.listModels()).map((m) => m.model))];
  return {
    object: "list",
    data: names.map((id) => ({ id, object: "model", created: createdSeconds, owned_by: "arclight" })),
  };
}
