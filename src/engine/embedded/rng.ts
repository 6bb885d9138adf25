/** @module Seeded random numbers in plain JS, so a seed gives one stream on every machine and backend. */

/** The largest seed {@link Rng} tells apart: it keeps a seed's low 32 bits. */
export const MAX_SEED = 0xffff_ffff;

/**
 * SplitMix32 finaliser over a Weyl sequence: fast, one counter of state, not cryptographic.
 * @see Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014
 */
export class Rng {
  private state: number;

  /** @param seed - any number; only its low 32 bits are used */
  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** @returns a uniform number in [0, 1) */
  nextFloat(): number {
    this.state = (this.state + 0x9e3779b9) >>> 0;
    let z = this.state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    z ^= z >>> 16;
    return (z >>> 0) / 4294967296;
  }

  /** @returns a standard normal number (Box–Muller) */
  nextGaussian(): number {
    const u1 = this.nextFloat() || 1e-12;
    const u2 = this.nextFloat();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }
}

/** @returns a random 32-bit seed for requests that bring none */
export function randomSeed(): number {
  return Math.floor(Math.random() * 4294967296);
}
