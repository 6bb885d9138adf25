/**
 * @module What every route plugin of the engine server shares: the engine, its tokenizer and chat template, the served model name,
 * the adapters served by name beside it, the admission gate (pause / weight swaps), and the one place a generation is
 * run.
 */
import { randomBytes } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { BadRequest } from "../../protocol/errors.js";
import type { ReasoningParser } from "../../wire/reasoning.js";
import type { ToolCallParser } from "../../wire/tool-calls.js";
import type { ChatTemplate } from "../chat-template.js";
import type { Engine, GenerateOptions, GenerationRequest, GenerationResult } from "../engine.js";
import type { Tokenizer } from "../tokenizer.js";
import type { Admission } from "./admission.js";
import type { CheckpointRoot } from "./checkpoint-root.js";

/** Response header carrying the policy version of the weights that generated the answer. */
export const POLICY_VERSION_HEADER = "x-policy-version";

/** One model the server answers by name, and the engine that generates its answers. */
export interface ServedModel {
  modelName: string;
  engine: Engine;
}

/** Shared state of one engine server. */
export interface ServerContext {
  /** The base engine: `/v1/load_weights` swaps its weights; a request without `model` runs on it. */
  engine: Engine;
  /** The engine's tokenizer. */
  tokenizer: Tokenizer;
  /** The engine's chat template. */
  chatTemplate: ChatTemplate;
  /** The base engine's model name (`/v1/models`, `model` of its answers). */
  modelName: string;
  /**
   * More models served by name (e.g. one policy per agent), each on its own engine sharing the base engine's tokenizer
   * and chat template; in `/v1/models` order.
   */
  adapters: ReadonlyMap<string, Engine>;
  admission: Admission;
  /** Unix seconds the server started (`created` of the model card). */
  startedS: number;
  /** Where `/v1/load_weights` may read; undefined: load_weights is off. */
  checkpointRoot?: CheckpointRoot;
  /** How tool calls are read from generated text. */
  toolCallParser: ToolCallParser;
  /** How reasoning is split from the answer; undefined: it is not. */
  reasoningParser?: ReasoningParser;
}

/** A generation that ran: its results and the policy version at admission (no swap can happen while it runs). */
export interface Generation {
  results: GenerationResult[];
  policyVersion: number;
}

/**
 * Runs one `generate` call of `model`'s engine behind the server's admission gate (one gate for every model): waits
 * while paused or swapping, then generates. Concurrent calls reach their engines concurrently, where each engine's
 * continuous batching decodes its own calls together.
 * @param model - the model the request named (from `servedModel`)
 * @param onAdmitted - called once admitted, before the first token (streams send their headers here)
 * @returns the results and the policy version of `model`'s engine at admission
 * @throws {BadRequest} when the engine rejects a prompt (RangeError: empty, too long, id outside the vocabulary)
 */
export async function runGeneration(
  ctx: ServerContext,
  model: ServedModel,
  requests: GenerationRequest[],
  options: GenerateOptions & { onAdmitted?: (policyVersion: number) => void } = {},
): Promise<Generation> {
  await ctx.admission.enter(options.signal);
  try {
    const policyVersion = model.engine.policyVersion;
    options.onAdmitted?.(policyVersion);
    try {
      const results = await model.engine.generate(requests, { onToken: options.onToken, signal: options.signal });
      return { results, policyVersion };
    } catch (err) {
      // The engine's own input checks (empty prompt, id outside the vocabulary) are the caller's mistake.
      if (err instanceof RangeError) throw new BadRequest(err.message);
      throw err;
    }
  } finally {
    ctx.admission.leave();
  }
}

/** Response id: `<prefix>-` + the `X-Request-Id` header when given, else 16 hex digits (as vLLM). */
export function responseId(prefix: "chatcmpl" | "cmpl", request: FastifyRequest): string {
  const header = request.headers["x-request-id"];
  return `${prefix}-${typeof header === "string" && header !== "" ? header : randomBytes(8).toString("hex")}`;
}

/** vLLM's `usage` of a non-stream answer. */
export function usage(promptTokens: number, completionTokens: number) {
  return {
    prompt_tokens: promptTokens,
    total_tokens: promptTokens + completionTokens,
    completion_tokens: completionTokens,
    prompt_tokens_details: null,
  };
}
