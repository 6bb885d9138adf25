/**
 * @module The body the proxy sends upstream: the agent's body with `model`, `temperature`, `return_token_ids` and
 * (train mode) `logprobs` set, and every other field forwarded untouched (unknown fields, `content: null` assistant
 * tool-call messages, tool-call argument strings, token-array prompts).
 */
import { BadRequest } from "../../protocol/index.js";
import type { ProxyEndpointKind } from "./capture.js";
import type { ProxyOptions } from "./options.js";

/** `train` calls produce training data; `val` calls are evaluation (AGL v1.0 proxy path segment). */
export type ProxyMode = "train" | "val";

/**
 * Builds the upstream body.
 * @param kind - chat or completions (completions' `logprobs` is an integer n; a positive n the agent chose is kept)
 * @param body - the agent's JSON body; not mutated
 * @param mode - train or val
 * @param options - model name, temperatures, include-log-probs
 * @returns a new body; `model` is the configured name, or the agent's own when none is configured
 * @throws {BadRequest} when no model name is configured and the body has no string `model`
 */
export function rewriteRequestBody(
  kind: ProxyEndpointKind,
  body: Record<string, unknown>,
  mode: ProxyMode,
  options: ProxyOptions,
): Record<string, unknown> {
  const model = options.modelName !== "" ? options.modelName : body.model;
  if (typeof model !== "string" || model === "") {
    throw new BadRequest("Request body needs a string `model` (no model name is configured on the gateway)");
  }
  const out: Record<string, unknown> = { ...body, model };
  out.temperature = mode === "train" ? options.trainTemperature : options.valTemperature;
  out.return_token_ids = true;
  if (mode === "train" && options.includeLogProbs) {
    const keepN = kind === "completions" && typeof body.logprobs === "number" && body.logprobs >= 1;
    out.logprobs = keepN ? body.logprobs : true;
  }
  return out;
}
