/**
 * @module One history row per step, as W&B's client writes them: what is logged for a step (metrics, tables) is
 * merged into one row, which is written when a later step is logged or the run ends.
 */

/** The row being gathered: its step and values. */
export class StepRow {
  private step: number | null = null;
  private values: Record<string, unknown> = {};

  /**
   * Adds values to the row of `step`.
   * @returns the previous step's row when `step` starts a new one (to be written now), else null
   */
  add(step: number, values: Record<string, unknown>): { step: number; values: Record<string, unknown> } | null {
    const done = this.step !== null && this.step !== step ? this.take() : null;
    this.step = step;
    Object.assign(this.values, values);
    return done;
  }

  /** @returns the row gathered so far (null when none), emptying it */
  take(): { step: number; values: Record<string, unknown> } | null {
    if (this.step === null) return null;
    const row = { step: this.step, values: this.values };
    this.step = null;
    this.values = {};
    return row;
  }
}
