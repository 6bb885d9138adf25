/**
 * @module The body the proxy sends upstream: the agent's body with `model`, `temperature`, `return_token_ids` and
 * (train mode) `logprobs` set, and every other byte forwarded untouched (unknown fields, integers beyond 2^53, key
 * order, whitespace, `content: null` assistant tool-call messages, tool-call argument strings, token-array prompts).
 */
import { BadRequest } from "../../protocol/index.js";
import type { ProxyEndpointKind } from "./capture.js";
import { setFields } from "./json-fields.js";
import type { ProxyOptions } from "./options.js";

/** `train` calls produce training data; `val` calls are evaluation (AGL v1.0 proxy path segment). */
export type ProxyMode = "train" | "val";

/** The agent's body as received: its exact text and the parsed object. */
export interface AgentBody {
  text: string;
  value: Record<string, unknown>;
}

/** The upstream body: the text sent (the agent's text with the proxy's fields spliced in) and the equal object. */
export interface UpstreamBody {
  text: string;
  /** The same fields as `text`, in the same order (numbers beyond 2^53 rounded, as JavaScript holds them). */
  value: Record<string, unknown>;
}

/**
 * The fields the proxy sets on a call.
 * @param kind - chat or completions (completions' `logprobs` is an integer n; a positive n the agent chose is kept)
 * @param body - the agent's parsed body; not mutated
 * @param mode - train or val
 * @param options - model name, temperatures, include-log-probs
 * @returns field name to value; `model` is the configured name, or the agent's own when none is configured
 * @throws {BadRequest} when no model name is configured and the body has no string `model`, or a train-mode call
 *   asks for `n > 1` choices
 */
export function proxyFields(
  kind: ProxyEndpointKind,
  body: Record<string, unknown>,
  mode: ProxyMode,
  options: ProxyOptions,
): Record<string, unknown> {
  const model = options.modelName !== "" ? options.modelName : body.model;
  if (typeof model !== "string" || model === "") {
    throw new BadRequest("Request body needs a non-empty string `model` (no model name is configured on the gateway)");
  }
  if (mode === "train" && typeof body.n === "number" && body.n > 1) {
    // The rollout's reward belongs to the one continuation the agent went on with; the other choices' outcomes are
    // unknown, so training them on that reward would credit them wrongly.
    throw new BadRequest(
      `n = ${body.n} is refused on train-mode calls: a rollout's reward scores the one choice the agent continued ` +
        "with; sample several rollouts (the trainer's group size n) instead, or call in val mode",
    );
  }
  const fields: Record<string, unknown> = { model };
  fields.temperature = mode === "train" ? options.trainTemperature : options.valTemperature;
  fields.return_token_ids = true;
  if (mode === "train" && options.includeLogProbs) {
    const keepN = kind === "completions" && typeof body.logprobs === "number" && body.logprobs >= 1;
    fields.logprobs = keepN ? body.logprobs : true;
  }
  return fields;
}

/**
 * Builds the upstream body from the agent's: {@link proxyFields} spliced into the agent's text with `setFields`.
 * @param kind - chat or completions
 * @param body - the agent's body (text and parsed object); not mutated
 * @param mode - train or val
 * @param options - model name, temperatures, include-log-probs
 * @param requestId - the body's `request_id` for the upstream (replacing the agent's; see `request-ids.ts`)
 * @returns the upstream text and the object it stands for (fields present keep their place, new ones are appended)
 * @throws {BadRequest} as {@link proxyFields}
 */
export function rewriteRequestBody(
  kind: ProxyEndpointKind,
  body: AgentBody,
  mode: ProxyMode,
  options: ProxyOptions,
  requestId?: string,
): UpstreamBody {
  const fields = proxyFields(kind, body.value, mode, options);
  if (requestId !== undefined) fields.request_id = requestId;
  return { text: setFields(body.text, fields), value: Object.assign({}, body.value, fields) };
}
