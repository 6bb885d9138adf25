/**
 * @module Non-stream `/v1/chat/completions` bodies in vLLM v0.19.0's exact shape (every key present, unset ones null).
 *
 * Facts copied from vLLM's source (checked key by key in app.test.ts):
 * - top-level keys, in order: `id, object:"chat.completion", created, model, choices, service_tier:null,
 *   system_fingerprint:null, usage, prompt_logprobs:null, prompt_token_ids, kv_transfer_params:null`;
 * - choice keys: `index, message, logprobs, finish_reason, stop_reason, token_ids`; message keys: `role, content,
 *   refusal, annotations, audio, function_call, tool_calls ([] when none), reasoning`;
 * - `token_ids` / `prompt_token_ids` are null unless `return_token_ids: true`; `token_ids` include the stop id;
 * - `logprobs` is `{content: [...]}`, one entry per id in `token_ids` (stop id included), only with `logprobs: true`;
 * - a parsed tool call sets `finish_reason: "tool_calls"` even when the engine stopped for length.
 * arclight adds one key at the end: `policy_version` (also sent as the `x-policy-version` header).
 * @see vLLM v0.19.0 `vllm/entrypoints/openai/chat_completion/{protocol,serving}.py`
 */

import { vllmAssistantMessage } from "../../protocol/assistant-message.js";
import type { ReasoningParser } from "../../wire/reasoning.js";
import { type ChatTool, parseHermesToolCalls, type ToolCallParser, type WireToolCall } from "../../wire/tool-calls.js";
import type { ToolCallDelimiters } from "../chat-template.js";
import type { GenerationResult } from "../engine.js";
import type { Tokenizer } from "../tokenizer.js";
import { usage } from "./context.js";
import { type ChatLogprobEntry, chatLogprobEntries, tokenStrings } from "./logprobs.js";
import { wireStopReason } from "./sampling.js";
import { visibleText } from "./text-stream.js";

/** How the choices of one chat request are written. */
export interface ChatRenderOptions {
  tokenizer: Tokenizer;
  /** The chat template's ids around a tool call. */
  toolCalls: ToolCallDelimiters;
  /** Stop strings of the request (the text is cut before them). */
  stop: string[];
  /** Parse tool calls (tools given and `tool_choice` not "none"). */
  parseTools: boolean;
  /** The model's tool-call format. */
  toolCallParser: ToolCallParser;
  /** The model's reasoning format; undefined: no reasoning is split off. */
  reasoningParser?: ReasoningParser;
  /** The request's `tools` (`qwen3_coder` types parameter values by their schema). */
  tools: readonly ChatTool[];
  /** `return_token_ids`: fill `token_ids` / `prompt_token_ids`. */
  returnTokenIds: boolean;
  /** `logprobs: true`: fill `logprobs.content`. */
  logprobs: boolean;
  /** The route's EOS ids, reported as `stop_reason: null`. */
  defaultStopTokenIds: number[];
}

/** The parts of an assistant message read from generated text. */
export interface ParsedMessage {
  content: string | null;
  toolCalls: WireToolCall[];
  /** The text the reasoning parser split off; null without one. */
  reasoning: string | null;
}

/** Whether a generation's text goes through a parser at all. */
export function parsesText(options: ChatRenderOptions): boolean {
  return options.parseTools || options.reasoningParser !== undefined;
}

/**
 * The special ids a parser must see as text: the template's tool-call delimiters for `hermes` alone, else every
 * special id of the generation but its stop ids (vLLM decodes with `skip_special_tokens: false` for such parsers).
 */
function keptSpecialIds(tokenIds: readonly number[], options: ChatRenderOptions): number[] {
  const { tokenizer, toolCalls, defaultStopTokenIds } = options;
  if (options.toolCallParser.name === "hermes" && options.reasoningParser === undefined) {
    return [toolCalls.startId, toolCalls.endId];
  }
  const stops = new Set(defaultStopTokenIds);
  return [...new Set(tokenIds)].filter((id) => tokenizer.isSpecial(id) && !stops.has(id));
}

/**
 * Splits text as vLLM's chat server does: the reasoning parser first, then the tool-call parser on what is left.
 * @param text - the generated text, the parsers' special tokens written as their strings
 */
export function parseGeneratedText(text: string, options: ChatRenderOptions): ParsedMessage {
  const split = options.reasoningParser?.split(text) ?? { reasoning: null, content: text };
  if (!options.parseTools || split.content === null) return { ...split, toolCalls: [] };
  const { tokenizer, toolCalls } = options;
  const parsed =
    options.toolCallParser.name === "hermes"
      ? parseHermesToolCalls(split.content, {
          start: tokenizer.decode([toolCalls.startId], false),
          end: tokenizer.decode([toolCalls.endId], false),
        })
      : options.toolCallParser.parse(split.content, options.tools);
  return { ...parsed, reasoning: split.reasoning };
}

/**
 * The text a parser reads from generated ids: stop strings cut, parser specials kept.
 * @param tokenIds - the generation, [completionLen]
 */
export function parserText(tokenIds: readonly number[], options: ChatRenderOptions): string {
  return visibleText(options.tokenizer, tokenIds, options.stop, keptSpecialIds(tokenIds, options));
}

/** The message text, reasoning and tool calls of one generation. */
function messageOf(result: GenerationResult, options: ChatRenderOptions): ParsedMessage {
  if (!parsesText(options)) {
    return { content: visibleText(options.tokenizer, result.tokenIds, options.stop), toolCalls: [], reasoning: null };
  }
  return parseGeneratedText(parserText(result.tokenIds, options), options);
}

/** Chat `logprobs` of a whole generation: `{content: [...]}`, or null when not asked. */
function logprobsOf(result: GenerationResult, options: ChatRenderOptions): { content: ChatLogprobEntry[] } | null {
  if (!options.logprobs) return null;
  const strings = tokenStrings(options.tokenizer);
  return { content: chatLogprobEntries(options.tokenizer, strings, result.tokenIds, result.logprobs) };
}

/**
 * One non-stream chat choice.
 * @param index - choice index
 * @param result - the engine's generation
 */
export function chatChoice(index: number, result: GenerationResult, options: ChatRenderOptions) {
  const { content, toolCalls, reasoning } = messageOf(result, options);
  return {
    index,
    message: vllmAssistantMessage(content, toolCalls, reasoning),
    logprobs: logprobsOf(result, options),
    finish_reason: toolCalls.length > 0 ? "tool_calls" : result.finishReason,
    stop_reason: wireStopReason(result.stopReason, options.defaultStopTokenIds),
    token_ids: options.returnTokenIds ? result.tokenIds : null,
  };
}

/** Identity of one answer: `id`, `created` (Unix s), served `model` name. */
export interface AnswerIdentity {
  id: string;
  created: number;
  model: string;
}

/**
 * The whole non-stream chat body.
 * @param promptTokenIds - the templated prompt, [promptLen]
 * @param results - one generation per choice
 * @param policyVersion - version of the weights that generated every choice
 */
export function chatBody(
  identity: AnswerIdentity,
  promptTokenIds: number[],
  results: GenerationResult[],
  policyVersion: number,
  options: ChatRenderOptions,
) {
  const completionTokens = results.reduce((sum, r) => sum + r.tokenIds.length, 0);
  return {
    id: identity.id,
    object: "chat.completion",
    created: identity.created,
    model: identity.model,
    choices: results.map((result, index) => chatChoice(index, result, options)),
    service_tier: null,
    system_fingerprint: null,
    usage: usage(promptTokenIds.length, completionTokens),
    prompt_logprobs: null,
    prompt_token_ids: options.returnTokenIds ? promptTokenIds : null,
    kv_transfer_params: null,
    policy_version: policyVersion,
  };
}
