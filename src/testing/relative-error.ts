/**
 * @module Comparing float arrays in numerics tests: the largest difference relative to the reference's scale.
 */

/**
 * Largest |a − b| relative to the largest |b|: how far `a` is from the reference `b` as a share of `b`'s scale.
 * @param a - the values under test
 * @param b - the reference values (same length as `a`)
 * @returns that ratio; the largest absolute difference itself when `b` is all zeros
 */
export function relativeError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < b.length; i++) {
    diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return diff / (scale || 1);
}
