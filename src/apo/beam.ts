/**
 * @module The beam of the prompt search: which scored prompts survive a round (the top `beam_width` by validation
 * score, the older prompt first on a tie so a candidate must beat its parent to replace it), and when the search
 * stops (no better best score for `patience` rounds in a row). Pure.
 */

/** A prompt scored on the validation split. */
export interface ScoredPrompt {
  /** `p0`, `p1`, … in the order prompts were scored. */
  id: string;
  prompt: string;
  /** Resource version holding it (the version its rollouts pinned). */
  version: number;
  /** Mean validation reward. */
  score: number;
  /** Round that proposed it; 0 for the starting prompt. */
  round: number;
  /** The beam prompt it was edited from; null for the starting prompt. */
  parentId: string | null;
}

/**
 * Keeps the top `width` prompts by score. The sort is stable, so on a tie the prompt earlier in `pool` (the older
 * one, when the beam comes first) stays ahead.
 * @param pool - the current beam followed by this round's candidates
 * @param width - beam width (>= 1)
 * @returns at most `width` prompts, best first
 * @throws {RangeError} when width < 1
 */
export function selectBeam(pool: readonly ScoredPrompt[], width: number): ScoredPrompt[] {
  if (width < 1) throw new RangeError(`beam width must be at least 1, got ${width}`);
  return [...pool].sort((a, b) => b.score - a.score).slice(0, width);
}

/** Where the search stands after a round. */
export interface RoundOutcome {
  /** Best score after the round minus the best before (0 when nothing improved). */
  gain: number;
  /** Rounds in a row without a gain, this one included. */
  stale: number;
  /** True when `stale` reached the patience. */
  stop: boolean;
}

/**
 * Decides whether the search goes on. A round gains when its best score is strictly higher than the best before; a
 * round whose optimiser output was unusable (no candidates) gains nothing and counts as stale.
 * @param bestBefore - best validation score before the round
 * @param bestAfter - best validation score after it
 * @param staleBefore - rounds in a row without a gain before this one
 * @param patience - stale rounds that stop the search (>= 1)
 * @returns the gain, the stale count and whether to stop
 */
export function roundOutcome(
  bestBefore: number,
  bestAfter: number,
  staleBefore: number,
  patience: number,
): RoundOutcome {
  const gain = Math.max(0, bestAfter - bestBefore);
  const stale = gain > 0 ? 0 : staleBefore + 1;
  return { gain, stale, stop: stale >= patience };
}
