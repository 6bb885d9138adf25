/**
 * @module Writes the flaky-lookup example's inputs: `data/train.jsonl` (240 inputs) and `data/val.jsonl` (48), each
 * `{"digits": "4 9 2"}` with one to three digits, from a fixed seed.
 * Usage: `npx tsx examples/flaky-lookup/generate-data.ts`.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** mulberry32: a small seeded generator, so the files are the same on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** `count` inputs of one to three random digits each, as JSON lines. */
function inputs(count: number, random: () => number): string {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const length = 1 + Math.floor(random() * 3);
    const digits = Array.from({ length }, () => Math.floor(random() * 10)).join(" ");
    lines.push(JSON.stringify({ digits }));
  }
  return `${lines.join("\n")}\n`;
}

const random = prng(49);
const dir = join(import.meta.dirname, "data");
writeFileSync(join(dir, "train.jsonl"), inputs(240, random));
writeFileSync(join(dir, "val.jsonl"), inputs(48, random));
