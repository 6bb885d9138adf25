/**
 * @module The text on both sides of each merge break that `arclight inspect` reports: the tokens the row had and the
 * tokens the next call's prompt has from the first difference on, after the tokens both share, each decoded through
 * the gateway, so a user sees `": "` against `":"` at once instead of two id lists.
 */
import type { MergeMismatch } from "../trainer/aggregate-result.js";
import type { ModelCall } from "../trainer/triplets.js";

/** Tokens shown on each side of a break. */
export const BREAK_CONTEXT_TOKENS = 12;

/** One merge break, with the ids and text around its first difference. */
export interface MergeBreakText {
  turn: number;
  position: number;
  kind: MergeMismatch["kind"];
  /** Ids before `position` that the row and the prompt share, at most {@link BREAK_CONTEXT_TOKENS}. */
  shared_ids: number[];
  /** The row's ids from `position` on (the previous call's prompt ⧺ response), at most {@link BREAK_CONTEXT_TOKENS}. */
  row_ids: number[];
  /** The call's prompt ids from `position` on, at most {@link BREAK_CONTEXT_TOKENS}; empty for `prompt_shorter`. */
  prompt_ids: number[];
  /** The texts of those ids, each id decoded alone and joined; null when the gateway could not decode them all. */
  shared_text: string | null;
  row_text: string | null;
  prompt_text: string | null;
}

/** Decodes token ids: id → text for those it could decode. */
export type DecodeIds = (ids: readonly number[]) => Promise<Record<string, string>>;

/**
 * The ids around one break. After a call merges, the row's tokens are that call's prompt ⧺ response (the prompt
 * starts with the row so far, the rest of it is appended as context, then the response), so the row a call breaks
 * is the previous call's prompt ⧺ response.
 * @param calls - the rollout's usable calls in turn order, as aggregated
 * @param mismatch - a break among them (never the first call's)
 * @returns the shared ids before the break, and each side's ids from it
 */
export function breakIds(
  calls: readonly ModelCall[],
  mismatch: MergeMismatch,
): Pick<MergeBreakText, "shared_ids" | "row_ids" | "prompt_ids"> {
  const index = calls.findIndex((call) => call.turn === mismatch.turn);
  const previous = calls[index - 1];
  const prompt = calls[index]?.promptTokenIds ?? [];
  const row = previous ? [...previous.promptTokenIds, ...previous.responseTokenIds] : [];
  const at = mismatch.position;
  return {
    shared_ids: prompt.slice(Math.max(0, at - BREAK_CONTEXT_TOKENS), at),
    row_ids: row.slice(at, at + BREAK_CONTEXT_TOKENS),
    prompt_ids: prompt.slice(at, at + BREAK_CONTEXT_TOKENS),
  };
}

/**
 * Each break with its ids and their text.
 * @param calls - the rollout's usable calls, as aggregated
 * @param mismatches - the breaks among them
 * @param decode - decodes ids (the gateway's detokenize route, through a server registered for the model)
 * @returns one entry per mismatch, in order
 */
export async function describeBreaks(
  calls: readonly ModelCall[],
  mismatches: readonly MergeMismatch[],
  decode: DecodeIds,
): Promise<MergeBreakText[]> {
  const windows = mismatches.map((mismatch) => breakIds(calls, mismatch));
  const ids = [...new Set(windows.flatMap((w) => [...w.shared_ids, ...w.row_ids, ...w.prompt_ids]))];
  const texts = ids.length > 0 ? await decode(ids) : {};
  const text = (part: readonly number[]) =>
    part.every((id) => texts[id] !== undefined) ? part.map((id) => texts[id]).join("") : null;
  return mismatches.map(({ turn, position, kind }, i) => {
    const window = windows[i] as (typeof windows)[number];
    return {
      turn,
      position,
      kind,
      ...window,
      shared_text: text(window.shared_ids),
      row_text: text(window.row_ids),
      prompt_text: text(window.prompt_ids),
    };
  });
}

/**
 * One line per break for a terminal: `turn 2 breaks the row at token 8, after "{\"city\":": row " \"Paris\"}",
 * prompt "\"Paris\"}"`; the ids when the text is unknown.
 */
export function breakLine(entry: MergeBreakText): string {
  const show = (text: string | null, ids: readonly number[]) =>
    text === null ? `ids [${ids.join(",")}]` : JSON.stringify(text);
  const after = entry.shared_ids.length > 0 ? `, after ${show(entry.shared_text, entry.shared_ids)}` : "";
  const prompt =
    entry.kind === "prompt_shorter" ? "the prompt ends here" : `prompt ${show(entry.prompt_text, entry.prompt_ids)}`;
  return `turn ${entry.turn} breaks the row at token ${entry.position}${after}: row ${show(entry.row_text, entry.row_ids)}, ${prompt}`;
}
