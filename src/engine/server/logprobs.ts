/**
 * @module Logprobs in vLLM's two wire shapes: chat `{content: [{token, logprob, bytes, top_logprobs}]}` and completions
 * `{text_offset, token_logprobs, tokens, top_logprobs}`. Values are the engine's: logprobs (nats) of the sampled ids
 * under the distribution actually sampled from. Top-k alternatives are not computed (`top_logprobs` is `[]` for chat;
 * for completions each entry holds only the sampled token, as vLLM does with `logprobs: 0`).
 */
import type { ByteTokenizer } from "../embedded/tokenizer.js";
import { TokenStrings } from "./text-stream.js";

/** vLLM clamps -inf logprobs to this value. */
const MIN_LOGPROB = -9999;

/** One chat logprob entry (vLLM `ChatCompletionLogProbsContent`). */
export interface ChatLogprobEntry {
  /** The id decoded alone, special tokens as their strings. */
  token: string;
  /** Nats, clamped at -9999. */
  logprob: number;
  /** The id's bytes: the byte itself, or the UTF-8 of a special token's string. */
  bytes: number[];
  top_logprobs: [];
}

/** Completions logprobs (vLLM `CompletionLogProbs`), one entry per generated id. */
export interface CompletionLogprobs {
  /** Character offset of each token string in the choice's text so far (UTF-16 units, as Python str length in ASCII). */
  text_offset: number[];
  token_logprobs: number[];
  tokens: string[];
  top_logprobs: Record<string, number>[];
}

/** NaN and anything below -9999 (e.g. -Infinity) become -9999, as vLLM sends them. */
function clamp(logprob: number): number {
  return Number.isNaN(logprob) ? MIN_LOGPROB : Math.max(logprob, MIN_LOGPROB);
}

/**
 * Chat logprob entries for a run of generated ids.
 * @param strings - the sequence's {@link TokenStrings} (stateful: pass every id of the sequence, in order, exactly once)
 * @param ids - the ids, [n]
 * @param logprobs - their logprobs (nats), [n]
 */
export function chatLogprobEntries(
  tokenizer: ByteTokenizer,
  strings: TokenStrings,
  ids: readonly number[],
  logprobs: readonly number[],
): ChatLogprobEntry[] {
  return ids.map((id, i) => ({
    token: strings.next(id),
    logprob: clamp(logprobs[i] ?? 0),
    bytes: tokenizer.tokenBytes(id),
    top_logprobs: [],
  }));
}

/**
 * Completions logprobs for a run of generated ids.
 * @param strings - the sequence's {@link TokenStrings} (stateful, as for {@link chatLogprobEntries})
 * @param ids - the ids, [n]
 * @param logprobs - their logprobs (nats), [n]
 * @param offset - characters of the choice's token strings already sent (0 for the first run)
 * @returns the logprobs and the offset after them
 */
export function completionLogprobs(
  strings: TokenStrings,
  ids: readonly number[],
  logprobs: readonly number[],
  offset: number,
): { logprobs: CompletionLogprobs; offset: number } {
  const out: CompletionLogprobs = { text_offset: [], token_logprobs: [], tokens: [], top_logprobs: [] };
  let at = offset;
  ids.forEach((id, i) => {
    const token = strings.next(id);
    const logprob = clamp(logprobs[i] ?? 0);
    out.text_offset.push(at);
    out.token_logprobs.push(logprob);
    out.tokens.push(token);
    out.top_logprobs.push({ [token]: logprob });
    at += token.length;
  });
  return { logprobs: out, offset: at };
}

/** A fresh {@link TokenStrings} for one sequence. */
export function tokenStrings(tokenizer: ByteTokenizer): TokenStrings {
  return new TokenStrings(tokenizer);
}
