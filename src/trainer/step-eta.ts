/**
 * @module Time left in a run, from the steps done so far: what the step progress bars and the console table show.
 * cli-progress computes its own ETA from the values since `start`, and the bars restart at every step (to print the
 * table row above them), so it read "ETA 0s" throughout.
 */

/** Estimates the time left as steps are reported. */
export class StepEta {
  private readonly startedMs: number;
  private first: { step: number; atMs: number } | null = null;
  private readonly now: () => number;

  /**
   * @param now - the clock, ms (tests pass their own)
   */
  constructor(now: () => number = Date.now) {
    this.now = now;
    this.startedMs = now();
  }

  /**
   * Records a finished step and estimates the rest.
   * @param step - the step just finished (1-based; a resumed run starts past 1)
   * @param totalSteps - the run's last step
   * @returns ms left: the mean step time so far times the steps left; the first step's time counts from construction
   */
  onStep(step: number, totalSteps: number): number {
    const atMs = this.now();
    if (this.first === null) this.first = { step, atMs };
    const stepsSince = step - this.first.step;
    const perStepMs = stepsSince > 0 ? (atMs - this.first.atMs) / stepsSince : atMs - this.startedMs;
    return Math.max(0, totalSteps - step) * perStepMs;
  }
}

/**
 * Formats a duration for a progress line: `45s`, `3m05s`, `2h07m`.
 * @param ms - duration, ms
 */
export function formatEta(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, "0")}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
}
