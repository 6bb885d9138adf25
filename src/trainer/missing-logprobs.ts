/**
 * @module Rows whose sampling-time logprobs are missing on some trained token (the upstream omitted them, a call was
 * captured with non-finite or misaligned ones, or the gateway runs with `include_log_probs: false`): find them, drop
 * them, or fill the gaps with logprobs the engine recomputes. Without one of the two, PPO would take the current
 * policy's logprobs as "old" and every ratio would be 1 — on-policy training, silently. Nothing here logs.
 */
import { isBelowFloor } from "../engine/nonfinite-guard.js";
import type { ScoredRow, TrainingRow } from "./training-row.js";

/**
 * Whether some trained (mask-1) token of a row lacks a recorded logprob.
 * @param row - any row
 * @returns true when at least one mask-1 position has a null old logprob
 */
export function lacksLogprobs(row: Pick<TrainingRow, "lossMask" | "oldLogprobs">): boolean {
  return row.lossMask.some((m, i) => m !== 0 && row.oldLogprobs[i] === null);
}

/**
 * Counts the trained tokens whose recorded logprob is below the engine's floor (e.g. vLLM's −9999 for a token its
 * sampler gave zero probability); the engine floors them (see `nonfinite-guard.ts`), this counts them for metrics.
 * @param rows - rows of one step
 * @returns the number of such mask-1 tokens
 */
export function flooredLogprobTokens(rows: readonly Pick<TrainingRow, "lossMask" | "oldLogprobs">[]): number {
  let count = 0;
  for (const row of rows)
    row.lossMask.forEach((m, i) => {
      const lp = row.oldLogprobs[i];
      if (m !== 0 && lp !== null && lp !== undefined && isBelowFloor(lp)) count += 1;
    });
  return count;
}

/**
 * Fills the missing logprobs of some rows with recomputed ones (the engine's logprobs under the weights the step
 * starts from, which in sync mode are the weights that sampled them). Recorded logprobs are kept as they are.
 * @param rows - the step's rows
 * @param indices - which rows to fill (those with {@link lacksLogprobs})
 * @param logprobs_D_T - engine logprobs of each of those rows' prompt ⧺ response ids, ragged [indices.length, T]
 * @returns new rows (the others unchanged) and how many tokens were filled
 * @throws {RangeError} when the logprobs do not have one row of the right length per index
 */
export function withRecomputedLogprobs<R extends ScoredRow>(
  rows: readonly R[],
  indices: readonly number[],
  logprobs_D_T: readonly (readonly number[])[],
): { rows: R[]; filledTokens: number } {
  if (logprobs_D_T.length !== indices.length)
    throw new RangeError(`recompute: got logprobs for ${logprobs_D_T.length} rows, expected ${indices.length}`);
  const out = [...rows];
  let filledTokens = 0;
  indices.forEach((rowIndex, k) => {
    const row = rows[rowIndex]!;
    const full = logprobs_D_T[k]!;
    const promptLen = row.promptTokenIds.length;
    if (full.length !== promptLen + row.responseTokenIds.length)
      throw new RangeError(
        `recompute: row ${rowIndex} has ${promptLen + row.responseTokenIds.length} tokens, got ${full.length} logprobs`,
      );
    const oldLogprobs = row.oldLogprobs.map((lp, i) => {
      if (lp !== null || row.lossMask[i] === 0) return lp;
      filledTokens += 1;
      return full[promptLen + i]!;
    });
    out[rowIndex] = { ...row, oldLogprobs };
  });
  return { rows: out, filledTokens };
}
