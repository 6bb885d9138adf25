/**
 * @module Tick labels of a chart's value axis, with as many digits as the tick step needs. uPlot's default formats
 * with `Intl.NumberFormat` (3 decimals at most), so a metric of size 1e-5 (`kl`) got ticks labelled `0`, `0`, `-0`.
 */

/** Steps from 1e-3 to below 1e6 are labelled in fixed notation; others in exponent notation. */
const FIXED_MIN_STEP = 1e-3;
const FIXED_MAX_STEP = 1e6;

/** Significant digits of a tick step's mantissa: 1 for 1, 2 or 5 × 10^k, 2 for 2.5 × 10^k. */
function stepDigits(step: number): number {
  const mantissa = step / 10 ** Math.floor(Math.log10(step));
  return Number(mantissa.toPrecision(6)) % 1 === 0 ? 1 : 2;
}

/**
 * Labels one axis's ticks.
 * @param ticks - tick values, ascending; null gives ""
 * @param step - the distance between ticks (uPlot's `foundIncr`), > 0
 * @returns one label per tick: a tick within half a step of zero reads `0` (never `-0`); fixed notation with the
 *   step's decimals (`0.25`, `-0.5`, `20`), exponent notation for steps under 1e-3 or from 1e6 (`2.5e-6`, `-5e-6`)
 * @example tickLabels([-1e-5, 0, 1e-5, 2e-5], 1e-5) // ["-1e-5", "0", "1e-5", "2e-5"]
 */
export function tickLabels(ticks: readonly (number | null)[], step: number): string[] {
  const digits = stepDigits(step);
  const stepExponent = Math.floor(Math.log10(step));
  const fixed = step >= FIXED_MIN_STEP && step < FIXED_MAX_STEP;
  return ticks.map((tick) => {
    if (tick === null) return "";
    if (Math.abs(tick) < step / 2) return "0";
    if (fixed) return tick.toFixed(Math.max(0, digits - 1 - stepExponent));
    const fraction = Math.max(0, Math.floor(Math.log10(Math.abs(tick))) - stepExponent + digits - 1);
    // Trailing zeros of the mantissa go: 2.0e-5 reads 2e-5.
    const [mantissa = "", exponent = ""] = tick.toExponential(fraction).split("e");
    const trimmed = mantissa.includes(".") ? mantissa.replace(/\.?0+$/, "") : mantissa;
    return `${trimmed}e${exponent.replace("+", "")}`;
  });
}
