/** @module Seeded pseudo-random numbers for the calculator example's data generator (mulberry32; never Math.random). */

/** A seeded source of uniform numbers; the same seed always yields the same sequence. */
export class Prng {
  private state: number;

  /** @param seed - any 32-bit integer; other numbers are truncated to their low 32 bits */
  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /**
   * The next float in [0, 1).
   * @see Tommy Ettinger's mulberry32, https://gist.github.com/tommyettinger/46a874533244883189143505d203312c
   */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /**
   * A uniform integer in [min, max], both ends included.
   * @throws {RangeError} when `max < min` or either bound is not an integer
   */
  int(min: number, max: number): number {
    if (!Number.isInteger(min) || !Number.isInteger(max) || max < min) {
      throw new RangeError(`Prng.int: bad range [${min}, ${max}]`);
    }
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /**
   * One element of `items`, uniformly.
   * @throws {RangeError} when `items` is empty
   */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("Prng.pick: no items");
    return items[this.int(0, items.length - 1)] as T;
  }
}
