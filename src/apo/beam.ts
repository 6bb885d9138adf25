/**
 * @module The prompt search's beam: the top `beam_width` by validation score (the older prompt first on a tie, so a
 * candidate must beat its parent), and stopping after `patience` rounds without a better best. Pure.
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

/** The top `width` prompts, best first; on a tie the stable sort keeps the earlier (older) one. @throws {RangeError} */
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

/** Whether the search goes on: a round gains only on a strictly higher best; a round with no candidates is stale. */
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
