/**
 * @module The prompt ids of one `tito` call: the longest recorded turn of the attempt whose conversation the request
 * repeats is reused token for token (its prompt ids, then its response ids), and only the messages after it are
 * rendered with the model's chat template and tokenised; with no such turn the whole conversation is rendered. A
 * conversation whose tool turns a framework regrouped is matched (and rendered) in its sequential form.
 */
import { isDeepStrictEqual } from "node:util";
import { type ChatInput, contentText } from "../../../wire/chat.js";
import type { TokenizerFolder } from "../../../wire/tokenizer-folder.js";
import { sameMessage, sameTools } from "./message-equality.js";
import { sequentialTurns } from "./sequential-turns.js";

type Json = Record<string, unknown>;

/** One earlier call of the attempt, as `tito` recorded it. */
export interface RecordedTurn {
  /** The event's sequence number. */
  sequence: number;
  /** The conversation the agent sent on that call. */
  chat: ChatInput;
  /** The assistant message the proxy answered with. */
  answer: Json;
  /** Prompt ids the upstream received, [P]. */
  promptIds: readonly number[];
  /** Response ids the upstream generated (end-of-turn id included when it stopped there), [R]. */
  responseIds: readonly number[];
}

/** How a call's prompt ids were built. */
export interface PromptPlan {
  /** The ids to send upstream, [P]. */
  promptIds: number[];
  /** `prefix`: a recorded turn was reused; `full`: the whole conversation was rendered. */
  path: "prefix" | "full";
  /** Number of leading ids taken from the recorded turn (its prompt + response); 0 on the full path. */
  prefixEnd: number;
  /** Number of leading messages the recorded turn covered (its messages + its answer); 0 on the full path. */
  prefixMessages: number;
  /** The reused turn's event sequence. */
  matchedSequence?: number;
  /**
   * True when the conversation matched only in its sequential form (`sequential-turns.ts`: a framework regrouped
   * single-call tool turns into one message) and was rendered in that form.
   */
  regrouped?: boolean;
  /** The conversation in the form rendered and to be recorded: the sequential form when `regrouped`, else as sent. */
  chat: ChatInput;
  /** Why the full path was taken: `no_recorded_turn`, `no_match`, `end_of_turn_in_text`. */
  reason?: string;
}

/** Whether the request repeats `turn`'s conversation and answer, with the same tools and template variables. */
function repeats(turn: RecordedTurn, chat: ChatInput): boolean {
  const earlier = turn.chat.messages;
  if (chat.messages.length <= earlier.length) return false;
  if (!sameTools(turn.chat.tools, chat.tools)) return false;
  if (!isDeepStrictEqual(turn.chat.templateKwargs ?? {}, chat.templateKwargs ?? {})) return false;
  for (let i = 0; i < earlier.length; i++) if (!sameMessage(earlier[i]!, chat.messages[i]!)) return false;
  return sameMessage(turn.answer, chat.messages[earlier.length]!);
}

/** The recorded turn with the most messages that the request repeats, or undefined. */
function longestRepeated(chat: ChatInput, turns: readonly RecordedTurn[]): RecordedTurn | undefined {
  let best: RecordedTurn | undefined;
  for (const turn of turns) {
    if (repeats(turn, chat) && (!best || turn.chat.messages.length > best.chat.messages.length)) best = turn;
  }
  return best;
}

/** The reused turn and the conversation in the form it matched (as sent, else sequential), or undefined. */
function matchTurn(
  chat: ChatInput,
  turns: readonly RecordedTurn[],
): { best: RecordedTurn; chat: ChatInput; regrouped: boolean } | undefined {
  const best = longestRepeated(chat, turns);
  if (best) return { best, chat, regrouped: false };
  const sequential = sequentialTurns(chat.messages);
  if (sequential === chat.messages) return undefined;
  const regroupedChat = { ...chat, messages: sequential };
  const found = longestRepeated(regroupedChat, turns);
  return found ? { best: found, chat: regroupedChat, regrouped: true } : undefined;
}

/** Index just past the `count`-th occurrence of `needle` in `text`, or -1. */
function afterOccurrence(text: string, needle: string, count: number): number {
  let at = -needle.length;
  for (let i = 0; i < count; i++) {
    at = text.indexOf(needle, at + needle.length);
    if (at < 0) return -1;
  }
  return at + needle.length;
}

function countOf(text: string, needle: string): number {
  let n = 0;
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) n++;
  return n;
}

/**
 * The rendered text that follows the reused turn: everything the template writes after the end-of-turn token that
 * closes the turn's answer (or from that token on, when the answer stopped without it, e.g. at `max_tokens`).
 *
 * Steps: 1. render the messages the turn covers (no generation prompt) and count their end-of-turn tokens, c;
 * 2. render the whole request (with the generation prompt); 3. the suffix starts after its c-th end-of-turn token.
 * Counting tokens rather than comparing texts keeps this right when the template rewrites history (Qwen3 drops an
 * earlier `<think>` block once a new user turn follows): the rewritten part lies before the cut and is replaced by
 * the recorded ids anyway.
 * @returns the suffix text, or undefined when a cut cannot be placed
 */
function suffixText(
  model: TokenizerFolder,
  chat: ChatInput,
  covered: number,
  endedWithEot: boolean,
): string | undefined {
  const eot = model.endOfTurn.text;
  const base = model.template.render({ ...chat, messages: chat.messages.slice(0, covered) }, false);
  const c = countOf(base, eot);
  const full = model.template.render(chat, true);
  const cut = afterOccurrence(full, eot, c);
  if (c === 0 || cut < 0) return undefined;
  return endedWithEot ? full.slice(cut) : full.slice(cut - eot.length);
}

/** Full path: the whole conversation rendered and tokenised. */
function fullPlan(model: TokenizerFolder, chat: ChatInput, reason: string): PromptPlan {
  const promptIds = model.tokenizer.encodeWithSpecials(model.template.render(chat, true));
  return { promptIds, path: "full", prefixEnd: 0, prefixMessages: 0, reason, chat };
}

/**
 * Builds the prompt ids of a call.
 * @param model - the model's tokenizer and template
 * @param chat - the request's messages, tools and template variables
 * @param turns - the attempt's earlier `tito` calls, any order
 * @returns the ids and how they were built
 * @see docs/tito.md for a worked example
 */
export function planPrompt(model: TokenizerFolder, chat: ChatInput, turns: readonly RecordedTurn[]): PromptPlan {
  if (turns.length === 0) return fullPlan(model, chat, "no_recorded_turn");
  // A message quoting the end-of-turn token would move the cut: such a conversation is rendered whole.
  const eot = model.endOfTurn.text;
  if (chat.messages.some((m) => contentText(m.content).includes(eot))) {
    return fullPlan(model, chat, "end_of_turn_in_text");
  }
  const match = matchTurn(chat, turns);
  if (!match) return fullPlan(model, chat, "no_match");
  const { best, regrouped } = match;
  const covered = best.chat.messages.length + 1;
  const endedWithEot = best.responseIds[best.responseIds.length - 1] === model.endOfTurn.id;
  const suffix = suffixText(model, match.chat, covered, endedWithEot);
  if (suffix === undefined) return fullPlan(model, chat, "no_match");
  const prefix = [...best.promptIds, ...best.responseIds];
  return {
    promptIds: [...prefix, ...model.tokenizer.encodeWithSpecials(suffix)],
    path: "prefix",
    prefixEnd: prefix.length,
    prefixMessages: covered,
    matchedSequence: best.sequence,
    chat: match.chat,
    ...(regrouped ? { regrouped } : {}),
  };
}
