/**
 * @module Task inputs and their order: a JSONL reader, and a cursor over a seeded per-epoch shuffle. The order is a
 * pure function of (seed, epoch), so a checkpoint stores only `{epoch, index}` and a resumed run draws the same inputs.
 */
import { readFileSync } from "node:fs";

/** One task input: its position in the file and the parsed JSON value. */
export interface DataItem {
  /** Line index among the file's non-empty lines, from 0. */
  index: number;
  input: unknown;
}

/** Where the cursor stands: epoch (from 0) and position in that epoch's shuffled order. */
export interface DataPosition {
  epoch: number;
  index: number;
}

/**
 * Reads a JSONL file of task inputs (blank lines skipped).
 * @param path - file path
 * @returns the inputs in file order
 * @throws {Error} naming the file and line when a line is not JSON, or the file cannot be read
 */
export function readJsonl(path: string): DataItem[] {
  const lines = readFileSync(path, "utf8").split("\n");
  const items: DataItem[] = [];
  lines.forEach((line, lineNo) => {
    if (line.trim() === "") return;
    try {
      items.push({ index: items.length, input: JSON.parse(line) });
    } catch (cause) {
      throw new Error(`${path}:${lineNo + 1}: not a JSON value (${(cause as Error).message})`, { cause });
    }
  });
  return items;
}

/**
 * mulberry32: a 32-bit seeded PRNG, enough to shuffle data reproducibly (not for cryptography).
 * @param seed - any integer
 * @returns a function giving floats in [0, 1)
 * @see https://gist.github.com/tommyettinger/46a874533244883189143505d203312c (mulberry32)
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The order of one epoch: a Fisher–Yates shuffle of 0..size-1 seeded by (seed, epoch).
 * @param size - number of inputs
 * @param seed - run seed
 * @param epoch - epoch, from 0
 * @returns a permutation of 0..size-1
 */
export function epochOrder(size: number, seed: number, epoch: number): number[] {
  const random = mulberry32((seed * 1_000_003 + epoch * 7919) | 0);
  const order = Array.from({ length: size }, (_, i) => i);
  for (let i = size - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  return order;
}

/** Draws inputs in seeded per-epoch shuffled order, crossing epochs as needed. */
export class DataCursor {
  private readonly items: readonly DataItem[];
  private readonly seed: number;
  private position: DataPosition;
  private order: number[];

  /**
   * @param items - the inputs (at least one)
   * @param seed - run seed
   * @param start - where to start (a checkpoint's position), default the first input of epoch 0
   * @throws {RangeError} when `items` is empty
   */
  constructor(items: readonly DataItem[], seed: number, start: DataPosition = { epoch: 0, index: 0 }) {
    if (items.length === 0) throw new RangeError("the train data has no inputs");
    this.items = items;
    this.seed = seed;
    this.position = { ...start };
    this.order = epochOrder(items.length, seed, start.epoch);
  }

  /** The next input to draw: a copy of the position, for checkpoints. */
  get current(): DataPosition {
    return { ...this.position };
  }

  /**
   * Draws the next input and advances, starting a new shuffled epoch after the last input.
   * @returns the input and the epoch it was drawn in
   */
  next(): { item: DataItem; epoch: number } {
    if (this.position.index >= this.items.length) {
      this.position = { epoch: this.position.epoch + 1, index: 0 };
      this.order = epochOrder(this.items.length, this.seed, this.position.epoch);
    }
    const item = this.items[this.order[this.position.index] as number] as DataItem;
    const epoch = this.position.epoch;
    this.position.index += 1;
    return { item, epoch };
  }
}
