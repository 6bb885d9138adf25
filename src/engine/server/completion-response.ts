/**
 * @module `/v1/completions` bodies and SSE chunks in vLLM v0.19.0's exact shape.
 *
 * Facts copied from vLLM's source:
 * - non-stream: `{id: "cmpl-…", object: "text_completion", created, model, choices: [{index, text, logprobs,
 *   finish_reason, stop_reason, token_ids, prompt_logprobs: null, prompt_token_ids}], service_tier: null,
 *   system_fingerprint: null, usage: {…, prompt_tokens_details: null}, kv_transfer_params: null}`;
 * - prompt ids are per choice; `index` = prompt × n + choice; `usage.prompt_tokens` adds each prompt once;
 * - `logprobs`: `{text_offset, token_logprobs, tokens, top_logprobs}`, `text_offset` stepping by each token string's
 *   length, stop id included;
 * - stream (all keys on every chunk, `exclude_unset=False`): `{id, object: "text_completion", created, model,
 *   choices: [{index, text, logprobs, finish_reason, stop_reason, prompt_token_ids, token_ids}], usage: null}`, with
 *   `prompt_token_ids` only in each choice's first chunk; no role chunk; usage chunk `choices: []` as in chat.
 * arclight adds top-level `policy_version` to the non-stream body and to each choice's first chunk.
 * @see vLLM v0.19.0 `vllm/entrypoints/openai/completion/{protocol,serving}.py`
 */

import type { GenerationResult, TokenEvent } from "../engine.js";
import type { Tokenizer } from "../tokenizer.js";
import type { AnswerIdentity } from "./chat-response.js";
import { usage } from "./context.js";
import { completionLogprobs, tokenStrings } from "./logprobs.js";
import { wireStopReason } from "./sampling.js";
import { TextAssembler } from "./text-stream.js";

/** How the choices of one completions request are written. */
export interface CompletionRenderOptions {
  tokenizer: Tokenizer;
  stop: string[];
  returnTokenIds: boolean;
  /** `logprobs` given (any integer): fill the logprobs object. */
  logprobs: boolean;
  defaultStopTokenIds: number[];
}

/** One non-stream choice. */
export function completionChoice(index: number, result: GenerationResult, options: CompletionRenderOptions) {
  const text = new TextAssembler(options.tokenizer, options.stop);
  const visible = result.tokenIds.map((id) => text.push(id)).join("") + text.finish();
  const strings = tokenStrings(options.tokenizer);
  return {
    index,
    text: visible,
    logprobs: options.logprobs ? completionLogprobs(strings, result.tokenIds, result.logprobs, 0).logprobs : null,
    finish_reason: result.finishReason,
    stop_reason: wireStopReason(result.stopReason, options.defaultStopTokenIds),
    token_ids: options.returnTokenIds ? result.tokenIds : null,
    prompt_logprobs: null,
    prompt_token_ids: options.returnTokenIds ? result.promptTokenIds : null,
  };
}

/**
 * The whole non-stream body.
 * @param results - generations in choice-index order (prompt-major)
 * @param promptTokens - sum of the prompts' lengths, each prompt once (tokens)
 */
export function completionBody(
  identity: AnswerIdentity,
  results: GenerationResult[],
  promptTokens: number,
  policyVersion: number,
  options: CompletionRenderOptions,
) {
  const completionTokens = results.reduce((sum, r) => sum + r.tokenIds.length, 0);
  return {
    id: identity.id,
    object: "text_completion",
    created: identity.created,
    model: identity.model,
    choices: results.map((result, index) => completionChoice(index, result, options)),
    service_tier: null,
    system_fingerprint: null,
    usage: usage(promptTokens, completionTokens),
    kv_transfer_params: null,
    policy_version: policyVersion,
  };
}

/** The chunks of one streamed completions choice (each id's chunk held until the next id, as in chat). */
export class CompletionChoiceStream {
  private pending: TokenEvent | undefined;
  private readonly strings;
  private readonly text: TextAssembler;
  private offset = 0;
  private first = true;

  /**
   * @param index - the choice index (prompt × n + choice)
   * @param identity - id, created and model shared by every chunk of the answer
   * @param promptTokenIds - this choice's prompt, [promptLen], sent in its first chunk
   * @param policyVersion - version of the weights generating it, sent in its first chunk
   * @param options - tokenizer, stop strings and logprob settings
   */
  constructor(
    private readonly index: number,
    private readonly identity: AnswerIdentity,
    private readonly promptTokenIds: number[],
    private readonly policyVersion: number,
    private readonly options: CompletionRenderOptions,
  ) {
    this.strings = tokenStrings(options.tokenizer);
    this.text = new TextAssembler(options.tokenizer, options.stop);
  }

  /** @returns the chunk of the previous id, now that another follows */
  push(token: TokenEvent): object | undefined {
    const previous = this.pending;
    this.pending = token;
    if (previous === undefined) return undefined;
    return this.chunk(this.text.push(previous.tokenId), [previous], null, null);
  }

  /** @returns the finishing chunk */
  finish(result: GenerationResult): object {
    const last = this.pending === undefined ? [] : [this.pending];
    const text = (last[0] ? this.text.push(last[0].tokenId) : "") + this.text.finish();
    const stopReason = wireStopReason(result.stopReason, this.options.defaultStopTokenIds);
    return this.chunk(text, last, result.finishReason, stopReason);
  }

  private chunk(text: string, tokens: TokenEvent[], finishReason: string | null, stopReason: number | string | null) {
    const ids = tokens.map((t) => t.tokenId);
    let logprobs = null;
    if (this.options.logprobs) {
      const out = completionLogprobs(
        this.strings,
        ids,
        tokens.map((t) => t.logprob),
        this.offset,
      );
      logprobs = out.logprobs;
      this.offset = out.offset;
    }
    const first = this.first;
    this.first = false;
    const choice = {
      index: this.index,
      text,
      logprobs,
      finish_reason: finishReason,
      stop_reason: stopReason,
      prompt_token_ids: first && this.options.returnTokenIds ? this.promptTokenIds : null,
      token_ids: this.options.returnTokenIds ? ids : null,
    };
    const { id, created, model } = this.identity;
    const extra = first ? { policy_version: this.policyVersion } : {};
    return { id, object: "text_completion", created, model, choices: [choice], usage: null, ...extra };
  }
}
