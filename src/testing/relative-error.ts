/**
 * @module Comparing float arrays in numerics tests: the largest difference relative to the reference's scale.
 */

/** max |a − b| / max |b|; the plain max |a − b| when `b` is all zeros. */
export function relativeError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < b.length; i++) {
    diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return diff / (scale || 1);
}
