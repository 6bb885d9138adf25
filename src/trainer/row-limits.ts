/**
 * @module Length limits applied to freshly aggregated rows, the same for both aggregation levels: drop rows whose
 * prompt is too long, truncate response regions that are too long, skip rows left with nothing to train on.
 */
import { type TrainingRow, trainableTokens } from "./training-row.js";

/** Maximum lengths of a row (tokens). */
export interface LengthLimits {
  /** Rows whose prompt is longer are dropped (tokens). */
  maxPromptLength: number;
  /** Response regions longer than this are cut to this length (tokens). */
  maxResponseLength: number;
}

/** The rows that passed, and how many were dropped, truncated or skipped. */
export interface LimitedRows {
  rows: TrainingRow[];
  /** Rows dropped because their prompt exceeded `maxPromptLength`. */
  droppedRows: number;
  /** Rows whose response region was cut to `maxResponseLength`. */
  truncatedRows: number;
  /** Rows skipped because they had 0 trainable tokens (after truncation). */
  emptyRows: number;
}

/** Cuts a row's response region (ids, mask, logprobs) to its first `length` tokens. */
function truncateRow(row: TrainingRow, length: number): TrainingRow {
  return {
    ...row,
    responseTokenIds: row.responseTokenIds.slice(0, length),
    lossMask: row.lossMask.slice(0, length),
    oldLogprobs: row.oldLogprobs.slice(0, length),
    ...(row.tokenTurns ? { tokenTurns: row.tokenTurns.slice(0, length) } : {}),
  };
}

/**
 * Applies the length limits to rows, in order: (1) drop a row whose prompt exceeds the maximum; (2) cut a response
 * region longer than the maximum; (3) skip a row with no mask-1 token left.
 * @param rows - aggregated rows
 * @param limits - maximum prompt and response-region lengths (tokens)
 * @returns the kept rows (same order) and the count of each outcome
 */
export function applyLengthLimits(rows: readonly TrainingRow[], limits: LengthLimits): LimitedRows {
  const result: LimitedRows = { rows: [], droppedRows: 0, truncatedRows: 0, emptyRows: 0 };
  for (const row of rows) {
    if (row.promptTokenIds.length > limits.maxPromptLength) {
      result.droppedRows += 1;
      continue;
    }
    let kept = row;
    if (row.responseTokenIds.length > limits.maxResponseLength) {
      kept = truncateRow(row, limits.maxResponseLength);
      result.truncatedRows += 1;
    }
    if (trainableTokens(kept) === 0) {
      result.emptyRows += 1;
      continue;
    }
    result.rows.push(kept);
  }
  return result;
}
