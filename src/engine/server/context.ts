/**
 * @module What every route plugin of the engine server shares: the engine, its tokenizer and chat template, the served model name,
 * the admission gate (pause / weight swaps), and the one place a generation is run.
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

/** Shared state of one engine server. */
export interface ServerContext {
  engine: Engine;
  /** The engine's tokenizer. */
  tokenizer: Tokenizer;
  /** The engine's chat template. */
  chatTemplate: ChatTemplate;
  /** The model name served (`/v1/models`, `model` of every answer). */
  modelName: string;
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
 * Runs one engine `generate` call behind the admission gate: waits while paused or swapping, then generates.
 * Concurrent calls reach the engine concurrently, where continuous batching decodes them together.
 * @param onAdmitted - called once admitted, before the first token (streams send their headers here)
 * @throws {BadRequest} when the engine rejects a prompt (RangeError: empty, too long, id outside the vocabulary)
 */
export async function runGeneration(
  ctx: ServerContext,
  requests: GenerationRequest[],
  options: GenerateOptions & { onAdmitted?: (policyVersion: number) => void } = {},
): Promise<Generation> {
  await ctx.admission.enter(options.signal);
  try {
    const policyVersion = ctx.engine.policyVersion;
    options.onAdmitted?.(policyVersion);
    try {
      const results = await ctx.engine.generate(requests, { onToken: options.onToken, signal: options.signal });
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
