/**
 * @module Assembles a streamed vLLM answer (the parsed SSE chunks) into the body the same call returns without
 * streaming, so a streamed call is recorded exactly like a non-streamed one.
 *
 * vLLM v0.19 stream facts this relies on (from vLLM's `chat_completion/serving.py` and `completion/serving.py`):
 * - chat: the first chunk of each choice is a role chunk `delta: {role: "assistant", content: ""}` with a TOP-LEVEL
 *   `prompt_token_ids`; every later chunk carries that step's `token_ids` (one id or several) and, when asked,
 *   `logprobs.content` for exactly those ids. Chunks whose text a tool parser hides are still sent as `delta: {}` WITH
 *   their `token_ids`; the finishing chunk carries the EOS id with `delta: {"content": ""}` or `delta: {}`.
 *   So the response ids are the concatenation over EVERY chunk of a choice index, `delta: {}` ones included.
 * - completions: no role chunk; `choices[i].prompt_token_ids` is filled only in each index's first chunk.
 * - tool calls arrive as deltas keyed by `index`: id/type/name once, then `function.arguments` pieces to concatenate;
 *   the finishing chunk may repeat the call with `id: null, type: null, name: null` (those nulls must not overwrite).
 * - `null` and absent mean the same. A usage chunk (`choices: []`) comes last when `include_usage` was asked;
 *   otherwise usage is computed the way vLLM does (prompt ids + generated ids, EOS counted).
 * - a failure mid-stream is one `data: {"error": {...}}` event.
 */
import { vllmAssistantMessage } from "../../protocol/assistant-message.js";

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

interface ToolCallParts {
  id: string | null;
  type: string | null;
  name: string | null;
  args: string[];
}

/** What is gathered for one choice index across chunks. */
interface ChoiceParts {
  text: string[];
  sawText: boolean;
  reasoning: string[];
  toolCalls: Map<number, ToolCallParts>;
  tokenIds: number[];
  tokenIdsMissing: boolean;
  promptTokenIds: number[] | null;
  chatLogprobs: unknown[];
  completionLogprobs: { text_offset: unknown[]; token_logprobs: unknown[]; tokens: unknown[]; top_logprobs: unknown[] };
  logprobChunks: number;
  noLogprobChunks: number;
  finishReason: unknown;
  stopReason: unknown;
}

function newChoiceParts(): ChoiceParts {
  return {
    text: [],
    sawText: false,
    reasoning: [],
    toolCalls: new Map(),
    tokenIds: [],
    tokenIdsMissing: false,
    promptTokenIds: null,
    chatLogprobs: [],
    completionLogprobs: { text_offset: [], token_logprobs: [], tokens: [], top_logprobs: [] },
    logprobChunks: 0,
    noLogprobChunks: 0,
    finishReason: null,
    stopReason: null,
  };
}

/** The outcome of {@link StreamAssembler.finish}. */
export interface AssembledStream {
  /** The equivalent non-stream body; null when the stream carried no chunk at all. */
  response: Json | null;
  /** The `{error}` body of an upstream error event, if one arrived. */
  error: Json | null;
  /** True when some chunk lacked `token_ids`, or logprobs came for only some chunks. */
  captureIncomplete: boolean;
}

/** Collects parsed SSE chunks of one call (chat or completions) and builds the non-stream equivalent. */
export class StreamAssembler {
  private readonly choices = new Map<number, ChoiceParts>();
  private header: Json | null = null;
  private promptTokenIds: number[] | null = null;
  private usage: Json | null = null;
  private error: Json | null = null;

  /** @param kind - which endpoint the stream comes from */
  constructor(private readonly kind: "chat" | "completions") {}

  /**
   * Adds one parsed chunk (the JSON of one `data:` event, `[DONE]` excluded).
   * @param chunk - a chat.completion.chunk, text_completion chunk, usage chunk or `{error}` event
   */
  add(chunk: unknown): void {
    if (!isObject(chunk)) return;
    if (chunk.error !== undefined && chunk.choices === undefined) {
      this.error = chunk;
      return;
    }
    this.header ??= chunk;
    if (Array.isArray(chunk.prompt_token_ids)) this.promptTokenIds = chunk.prompt_token_ids as number[];
    if (isObject(chunk.usage)) this.usage = chunk.usage;
    if (!Array.isArray(chunk.choices)) return;
    for (const choice of chunk.choices) {
      if (!isObject(choice)) continue;
      const index = typeof choice.index === "number" ? choice.index : 0;
      let parts = this.choices.get(index);
      if (!parts) {
        parts = newChoiceParts();
        this.choices.set(index, parts);
      }
      if (this.kind === "chat") addChatChoice(parts, choice);
      else addCompletionChoice(parts, choice);
      if (choice.finish_reason != null) parts.finishReason = choice.finish_reason;
      if (choice.stop_reason !== undefined) parts.stopReason = choice.stop_reason;
    }
  }

  /** @returns the assembled body, any upstream error event, and whether capture is incomplete */
  finish(): AssembledStream {
    if (this.header === null) return { response: null, error: this.error, captureIncomplete: false };
    const indices = [...this.choices.keys()].sort((a, b) => a - b);
    let captureIncomplete = false;
    const choices = indices.map((index) => {
      const parts = this.choices.get(index)!;
      // Logprobs on some token chunks but not on others cannot be aligned with the ids.
      if (parts.tokenIdsMissing || (parts.logprobChunks > 0 && parts.noLogprobChunks > 0)) captureIncomplete = true;
      return this.kind === "chat" ? buildChatChoice(index, parts) : buildCompletionChoice(index, parts);
    });
    const response = this.kind === "chat" ? this.chatBody(choices) : this.completionBody(choices);
    return { response, error: this.error, captureIncomplete };
  }

  private chatBody(choices: Json[]): Json {
    const h = this.header!;
    return {
      id: h.id,
      object: "chat.completion",
      created: h.created,
      model: h.model,
      choices,
      service_tier: null,
      system_fingerprint: h.system_fingerprint ?? null,
      usage: this.finalUsage(choices, this.promptTokenIds?.length ?? null),
      prompt_logprobs: null,
      prompt_token_ids: this.promptTokenIds,
      kv_transfer_params: null,
    };
  }

  private completionBody(choices: Json[]): Json {
    const h = this.header!;
    let promptTokens: number | null = 0;
    for (const choice of choices) {
      const ids = choice.prompt_token_ids;
      if (!Array.isArray(ids)) promptTokens = null;
      else if (promptTokens !== null) promptTokens += ids.length;
    }
    return {
      id: h.id,
      object: "text_completion",
      created: h.created,
      model: h.model,
      choices,
      service_tier: null,
      system_fingerprint: h.system_fingerprint ?? null,
      usage: this.finalUsage(choices, promptTokens),
      kv_transfer_params: null,
    };
  }

  /** The usage chunk's counts, else vLLM's own rule: prompt ids + all generated ids (null when ids are missing). */
  private finalUsage(choices: Json[], promptTokens: number | null): Json | null {
    if (this.usage) return { ...this.usage, prompt_tokens_details: this.usage.prompt_tokens_details ?? null };
    let completionTokens = 0;
    for (const choice of choices) {
      if (!Array.isArray(choice.token_ids)) return null;
      completionTokens += choice.token_ids.length;
    }
    if (promptTokens === null) return null;
    return {
      prompt_tokens: promptTokens,
      total_tokens: promptTokens + completionTokens,
      completion_tokens: completionTokens,
      prompt_tokens_details: null,
    };
  }
}

/** Token ids and logprob bookkeeping shared by both kinds. The role chunk (chat) carries no ids by design. */
function addTokenIds(parts: ChoiceParts, choice: Json, isRoleChunk: boolean): boolean {
  if (Array.isArray(choice.token_ids)) {
    for (const id of choice.token_ids) parts.tokenIds.push(id as number);
    return true;
  }
  if (!isRoleChunk) parts.tokenIdsMissing = true;
  return !isRoleChunk;
}

function addChatChoice(parts: ChoiceParts, choice: Json): void {
  const delta = isObject(choice.delta) ? choice.delta : {};
  const isRoleChunk = delta.role !== undefined && choice.token_ids == null;
  const generated = addTokenIds(parts, choice, isRoleChunk);
  const logprobs = isObject(choice.logprobs) && Array.isArray(choice.logprobs.content) ? choice.logprobs.content : null;
  if (logprobs) {
    for (const entry of logprobs) parts.chatLogprobs.push(entry);
    parts.logprobChunks++;
  } else if (generated) parts.noLogprobChunks++;
  if (typeof delta.content === "string") {
    parts.text.push(delta.content);
    parts.sawText = true;
  }
  if (typeof delta.reasoning === "string") parts.reasoning.push(delta.reasoning);
  if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) mergeToolCall(parts, call);
}

function mergeToolCall(parts: ChoiceParts, call: unknown): void {
  if (!isObject(call)) return;
  const index = typeof call.index === "number" ? call.index : parts.toolCalls.size;
  let merged = parts.toolCalls.get(index);
  if (!merged) {
    merged = { id: null, type: null, name: null, args: [] };
    parts.toolCalls.set(index, merged);
  }
  if (typeof call.id === "string") merged.id = call.id;
  if (typeof call.type === "string") merged.type = call.type;
  const fn = isObject(call.function) ? call.function : {};
  if (typeof fn.name === "string") merged.name = fn.name;
  if (typeof fn.arguments === "string") merged.args.push(fn.arguments);
}

function addCompletionChoice(parts: ChoiceParts, choice: Json): void {
  if (parts.promptTokenIds === null && Array.isArray(choice.prompt_token_ids)) {
    parts.promptTokenIds = choice.prompt_token_ids as number[];
  }
  const generated = addTokenIds(parts, choice, false);
  const lp = isObject(choice.logprobs) ? choice.logprobs : null;
  if (lp) {
    const acc = parts.completionLogprobs;
    for (const key of ["text_offset", "token_logprobs", "tokens", "top_logprobs"] as const) {
      const values = lp[key];
      if (Array.isArray(values)) for (const v of values) acc[key].push(v);
    }
    parts.logprobChunks++;
  } else if (generated) parts.noLogprobChunks++;
  if (typeof choice.text === "string") {
    parts.text.push(choice.text);
    parts.sawText = true;
  }
}

/** Logprobs of a choice, or null when none came or they came for only some chunks. */
function hasAlignedChunks(parts: ChoiceParts): boolean {
  return parts.logprobChunks > 0 && parts.noLogprobChunks === 0;
}

function buildChatChoice(index: number, parts: ChoiceParts): Json {
  const toolCalls = [...parts.toolCalls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, call]) => ({
      id: call.id,
      type: call.type ?? "function",
      function: { name: call.name, arguments: call.args.join("") },
    }));
  const text = parts.text.join("");
  // vLLM: with tool calls, blank text before the first <tool_call> becomes `content: null`.
  const content = toolCalls.length > 0 && text.trim() === "" ? null : parts.sawText ? text : null;
  return {
    index,
    message: vllmAssistantMessage(content, toolCalls, parts.reasoning.length > 0 ? parts.reasoning.join("") : null),
    logprobs: hasAlignedChunks(parts) ? { content: parts.chatLogprobs } : null,
    finish_reason: parts.finishReason,
    stop_reason: parts.stopReason,
    token_ids: parts.tokenIdsMissing ? null : parts.tokenIds,
  };
}

function buildCompletionChoice(index: number, parts: ChoiceParts): Json {
  return {
    index,
    text: parts.text.join(""),
    logprobs: hasAlignedChunks(parts) ? parts.completionLogprobs : null,
    finish_reason: parts.finishReason,
    stop_reason: parts.stopReason,
    token_ids: parts.tokenIdsMissing ? null : parts.tokenIds,
    prompt_logprobs: null,
    prompt_token_ids: parts.promptTokenIds,
  };
}
