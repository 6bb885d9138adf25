/**
 * @module Streamed `/v1/chat/completions` chunks in vLLM v0.19.0's shape (chunks dumped with `exclude_unset`):
 * 1. one role chunk per choice: `delta: {role: "assistant", content: ""}`, `logprobs: null`, `finish_reason: null` and a
 *    top-level `prompt_token_ids` (null unless `return_token_ids`); arclight adds top-level `policy_version` here;
 * 2. one chunk per generated id: choice keys `index, delta, logprobs, finish_reason: null, token_ids` (no
 *    `stop_reason`); without a tool parser the delta is always `{content}` (even `""`); with one, ids it keeps to itself
 *    get `delta: {}`, sent only with `return_token_ids` (else skipped, as vLLM does);
 * 3. the finishing chunk carries the last id plus `finish_reason` and `stop_reason` (`tool_calls` when a call was sent);
 * 4. with `stream_options.include_usage`: `{…, choices: [], usage: {prompt_tokens, total_tokens, completion_tokens}}`;
 * 5. `data: [DONE]`.
 * Each id's chunk is held until the next id (or the end) arrives, so the last id lands in the finishing chunk.
 * @see vLLM v0.19.0 `vllm/entrypoints/openai/chat_completion/serving.py` (`chat_completion_stream_generator`)
 */
import type { GenerationResult, TokenEvent } from "../engine.js";
import { type AnswerIdentity, type ChatRenderOptions, parsesText } from "./chat-response.js";
import { chatLogprobEntries, tokenStrings } from "./logprobs.js";
import { ParsedTextStream } from "./parsed-text-stream.js";
import { wireStopReason } from "./sampling.js";
import { TextAssembler } from "./text-stream.js";
import { type ChatDelta, ToolCallStream } from "./tool-call-stream.js";

/** Joins two deltas of one chunk (the last id's delta and the text flushed at the end). */
function mergeDeltas(a: ChatDelta, b: ChatDelta): ChatDelta {
  if (!("content" in b)) return a;
  if (!("content" in a)) return b;
  if (typeof a.content === "string" && typeof b.content === "string") return { content: a.content + b.content };
  return a;
}

/** The chunks of one streamed choice. */
export class ChatChoiceStream {
  private pending: TokenEvent | undefined;
  private readonly strings;
  private readonly tools: ToolCallStream | ParsedTextStream | undefined;
  private readonly text: TextAssembler;

  /**
   * @param index - the choice index
   * @param identity - id, created and model shared by every chunk of the answer
   * @param options - tokenizer, stop strings, tool parsing and logprob settings
   */
  constructor(
    private readonly index: number,
    private readonly identity: AnswerIdentity,
    private readonly options: ChatRenderOptions,
  ) {
    this.strings = tokenStrings(options.tokenizer);
    const hermesOnly =
      options.parseTools && options.toolCallParser.name === "hermes" && options.reasoningParser === undefined;
    this.tools = hermesOnly
      ? new ToolCallStream(options.tokenizer, options.toolCalls, options.stop)
      : parsesText(options)
        ? new ParsedTextStream(options)
        : undefined;
    this.text = new TextAssembler(options.tokenizer, options.stop);
  }

  /** The role chunk of this choice. */
  roleChunk(promptTokenIds: number[], policyVersion: number) {
    const choices = [
      { index: this.index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null },
    ];
    const prompt_token_ids = this.options.returnTokenIds ? promptTokenIds : null;
    return { ...this.header(), choices, prompt_token_ids, policy_version: policyVersion };
  }

  /** @returns the chunk of the previous id, now that another id follows (undefined when skipped or none) */
  push(token: TokenEvent): object | undefined {
    const previous = this.pending;
    this.pending = token;
    if (previous === undefined) return undefined;
    const delta = this.deltaOf(previous.tokenId);
    if (this.tools && !("content" in delta) && !this.options.returnTokenIds) {
      // Skipped, as vLLM skips it (its logprob is lost); the token-string decoder still has to see the id.
      this.strings.next(previous.tokenId);
      return undefined;
    }
    return this.chunk(delta, [previous], { finish_reason: null });
  }

  /** @returns the finishing chunk: the last id (if any), text held back, `finish_reason` and `stop_reason` */
  finish(result: GenerationResult): object {
    const last = this.pending === undefined ? [] : [this.pending];
    let delta: ChatDelta = last[0] ? this.deltaOf(last[0].tokenId) : this.tools ? {} : { content: "" };
    delta = mergeDeltas(delta, this.tools ? this.tools.finish() : { content: this.text.finish() });
    const sentCall = (this.tools?.callsSent ?? 0) > 0;
    return this.chunk(delta, last, {
      finish_reason: sentCall ? "tool_calls" : result.finishReason,
      stop_reason: wireStopReason(result.stopReason, this.options.defaultStopTokenIds),
    });
  }

  private deltaOf(id: number): ChatDelta {
    return this.tools ? this.tools.push(id) : { content: this.text.push(id) };
  }

  private header() {
    return {
      id: this.identity.id,
      object: "chat.completion.chunk",
      created: this.identity.created,
      model: this.identity.model,
    };
  }

  private chunk(delta: ChatDelta, tokens: TokenEvent[], finish: Record<string, unknown>) {
    const ids = tokens.map((t) => t.tokenId);
    const logprobs = this.options.logprobs
      ? {
          content: chatLogprobEntries(
            this.options.tokenizer,
            this.strings,
            ids,
            tokens.map((t) => t.logprob),
          ),
        }
      : null;
    const token_ids = this.options.returnTokenIds ? ids : null;
    return { ...this.header(), choices: [{ index: this.index, delta, logprobs, ...finish, token_ids }] };
  }
}

/** The `include_usage` chunk (dumped with `exclude_none`: no null keys). */
export function chatUsageChunk(identity: AnswerIdentity, promptTokens: number, completionTokens: number) {
  return {
    id: identity.id,
    object: "chat.completion.chunk",
    created: identity.created,
    model: identity.model,
    choices: [],
    usage: {
      prompt_tokens: promptTokens,
      total_tokens: promptTokens + completionTokens,
      completion_tokens: completionTokens,
    },
  };
}
